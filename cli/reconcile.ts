import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { DAY_MS } from '../reconcile/bill';
import { raiseDrift } from '../reconcile/raise-drift';
import type { GenerationTokens } from '../reconcile/generation-tokens';
import type { GenerationCheck } from '../reconcile/openrouter-generations';
import type { ReconciliationReport } from '../reconcile/report';
import { runReconciliation, runSettings, type BillSource } from '../reconcile/run';
import { apiSource, MissingSourceError } from '../reconcile/sources';
import { errorLine, UserError } from './errors';
import { withStore } from './store';
import { renderTable } from './table';
import { TIME_HELP, timeRange } from './time-range';

const usd = (amount: string | null | undefined) => (amount == null ? '-' : `$${amount}`);

/** The report as the table `tollgate reconcile` prints: one row per day x model, then the totals. */
export function reportTable(report: ReconciliationReport): string {
  // The list cost only when a negotiated discount (pricing.discounts) priced some line below it.
  const listed = report.lines.some((l) => (l.gateway?.list_cost_usd ?? l.gateway?.cost_usd) !== l.gateway?.cost_usd);
  const rows = report.lines.map((l) => [
    l.day,
    l.model ?? '(no model)',
    l.scope ?? '',
    l.status,
    usd(l.gateway?.cost_usd),
    ...(listed ? [usd(l.gateway && (l.gateway.list_cost_usd ?? l.gateway.cost_usd))] : []),
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
      ...(listed ? [{ header: 'list cost', ...right }] : []),
      { header: 'provider', ...right },
      { header: 'difference', ...right },
      { header: 'ratio', ...right },
    ],
    rows,
  );
  const t = report.totals;
  const lines = [
    table,
    `${report.provider} ${report.from} to ${report.to} (UTC days, end excluded): provider ${usd(t.provider_usd)}, gateway ${usd(t.gateway_usd)}${listed && t.gateway_list_usd ? ` (${usd(t.gateway_list_usd)} at list price)` : ''}, difference ${t.difference_usd}; drift over the final days ${t.drift ?? '- (none final yet)'}`,
  ];
  if (report.generations) lines.push(generationsText(report.generations));
  if (report.discount)
    lines.push(
      `Inferred discount: the provider charges ${report.discount.multiplier} of list price on ${report.discount.models.join(', ')}. To price at it:\n${report.discount.override}`,
    );
  return `${lines.join('\n')}\n`;
}

const tokensText = (t: GenerationTokens | null) => (t === null ? '-' : `${t.prompt}+${t.completion}`);

/** OpenRouter's record-by-record check: its counts, then the records not matched. */
function generationsText(g: GenerationCheck): string {
  const head = `Generations: ${g.checked} checked, ${g.matched} matched, ${g.differing} charged differently, ${g.tokens_differing} with other tokens, ${g.missing} unknown to the provider, ${g.without_id} records without a generation id`;
  if (g.lines.length === 0) return head;
  const right = { align: 'right' as const };
  const table = renderTable(
    [
      { header: 'generation' },
      { header: 'status' },
      { header: 'gateway', ...right },
      { header: 'provider', ...right },
      { header: 'gateway tokens', ...right },
      { header: 'provider tokens', ...right },
    ],
    g.lines.map((l) => [
      l.generation_id,
      l.status,
      usd(l.gateway_usd),
      usd(l.provider_usd),
      tokensText(l.gateway_tokens),
      tokensText(l.provider_tokens),
    ]),
  );
  return `${head}
${table}`;
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
      'the gateway provider whose bill to check (openai, anthropic, openrouter, or any with --csv)',
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
      const outcome = await withStore(loaded, async (store) => {
        // A store no gateway has opened yet gets its tables first (and an older one the runs' table).
        await store.migrate();
        const result = await runReconciliation(
          {
            queryUsage: (q) => store.queryUsage(q),
            listRequests: (q) => store.listRequests(q),
            runs: store.reconciliationRuns?.(),
          },
          source,
          range,
          runSettings(c, opts.provider),
        );
        if (!result.report) return result;
        const alert = await raiseDrift(
          loaded.config.alerts,
          store.alertOutbox?.(),
          result.report,
          c.drift_alert,
          result.id,
        );
        if (alert) process.stderr.write(`tollgate: alert: ${alert.title}\n`);
        return result;
      });
      if (!outcome.report) throw new UserError(`reconciliation failed (run ${outcome.id}): ${outcome.error}`);
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ run_id: outcome.id, ...outcome.report }, null, 2)}\n`
          : reportTable(outcome.report),
      );
    });
}
