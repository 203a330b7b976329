import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { completeAlert } from '../alerts/alert';
import type { LoadedConfig } from '../config/load';
import { DAY_MS } from '../reconcile/bill';
import { driftAlert } from '../reconcile/drift-alert';
import type { ReconciliationReport } from '../reconcile/report';
import { runReconciliation, type BillSource } from '../reconcile/run';
import { apiSource, MissingSourceError } from '../reconcile/sources';
import type { UsageStore } from '../storage/store';
import { errorLine, UserError } from './errors';
import { withStore } from './store';
import { renderTable } from './table';
import { TIME_HELP, timeRange } from './time-range';

const usd = (amount: string | null | undefined) => (amount == null ? '-' : `$${amount}`);

/** The report as the table `tollgate reconcile` prints: one row per day x model, then the totals. */
export function reportTable(report: ReconciliationReport): string {
  const rows = report.lines.map((l) => [
    l.day,
    l.model ?? '(no model)',
    l.scope ?? '',
    l.status,
    usd(l.gateway?.cost_usd),
    usd(l.provider?.cost_usd),
    l.difference_usd === null ? '-' : l.difference_usd,
    l.ratio ?? '-',
  ]);
  const right = { align: 'right' as const };
  const table = renderTable(
    [
      { header: 'day' },
      { header: 'model' },
      { header: 'scope' },
      { header: 'status' },
      { header: 'gateway', ...right },
      { header: 'provider', ...right },
      { header: 'difference', ...right },
      { header: 'ratio', ...right },
    ],
    rows,
  );
  const t = report.totals;
  const lines = [
    table,
    `${report.provider} ${report.from} to ${report.to} (UTC days, end excluded): provider ${usd(t.provider_usd)}, gateway ${usd(t.gateway_usd)}, difference ${t.difference_usd}; drift over the final days ${t.drift ?? '- (none final yet)'}`,
  ];
  if (report.discount)
    lines.push(
      `Inferred discount: the provider charges ${report.discount.multiplier} of list price on ${report.discount.models.join(', ')}. To price at it:\n${report.discount.override}`,
    );
  return `${lines.join('\n')}\n`;
}

/** A drift past reconcile.drift_alert, stored in the alert outbox: the running gateway delivers it. */
async function raiseDrift(loaded: LoadedConfig, store: UsageStore, report: ReconciliationReport, runId: number | null) {
  const input = driftAlert(report, loaded.config.reconcile.drift_alert, runId);
  if (!input) return;
  const alerts = loaded.config.alerts;
  const alert = completeAlert(input, Date.now(), alerts.dashboard_url);
  process.stderr.write(`tollgate: alert: ${alert.title}\n`);
  if (alerts.channels.length === 0 || !store.alertOutbox) return;
  await store.alertOutbox().enqueue(
    { alertId: alert.alert_id, kind: alert.kind, workspace: null, createdAt: Date.now(), body: JSON.stringify(alert) },
    alerts.channels.map((c) => c.name),
  );
}

function sourceOf(loaded: LoadedConfig, provider: string, csv: string | undefined): BillSource {
  if (csv !== undefined) {
    try {
      return { kind: 'csv', name: basename(csv), text: readFileSync(csv, 'utf8') };
    } catch (err) {
      throw new UserError(`cannot read ${csv}: ${errorLine(err)}`);
    }
  }
  try {
    return apiSource(loaded.config.reconcile, provider);
  } catch (err) {
    if (err instanceof MissingSourceError) throw new UserError(err.message);
    throw err;
  }
}

/** `tollgate reconcile`: the provider's bill against the recorded spend, per UTC day x model, stored as a run. */
export function registerReconcileCommand(program: Command, load: () => LoadedConfig): void {
  program
    .command('reconcile')
    .description("check the recorded spend against a provider's bill (its usage and cost API, or a CSV export)")
    .requiredOption(
      '--provider <slug>',
      'the gateway provider whose bill to check (openai, anthropic, or any with --csv)',
    )
    .option('--from <time>', `first day (${TIME_HELP}); default: 7 days before --to`)
    .option('--to <time>', `end, excluded (${TIME_HELP}); default: the start of today (UTC)`)
    .option('--csv <file>', "the provider console's CSV export instead of its API (docs/reconciliation.md)")
    .option('--json', 'print the report as JSON')
    .action(async (opts: { provider: string; from?: string; to?: string; csv?: string; json?: boolean }) => {
      const loaded = load();
      const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
      const range = timeRange({ from: opts.from, to: opts.to ?? String(today) }, (to) => to - 7 * DAY_MS);
      const source = sourceOf(loaded, opts.provider, opts.csv);
      const c = loaded.config.reconcile;
      const outcome = await withStore(
        loaded,
        async (store) => {
          const result = await runReconciliation(
            { queryUsage: (q) => store.queryUsage(q), runs: store.reconciliationRuns?.() },
            source,
            range,
            {
              provider: opts.provider,
              tolerance: c.tolerance,
              restateDays: c.restate_days,
              scopes: c.providers[opts.provider]?.scopes ?? {},
            },
          );
          if (result.report) await raiseDrift(loaded, store, result.report, result.id);
          return result;
        },
        { mustExist: true },
      );
      if (!outcome.report) throw new UserError(`reconciliation failed (run ${outcome.id}): ${outcome.error}`);
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ run_id: outcome.id, ...outcome.report }, null, 2)}\n`
          : reportTable(outcome.report),
      );
    });
}
