/**
 * `tollgate reconcile-fix <run>`: a stale price that a reconciliation run found (priced_differently lines) fixed in
 * one step: a dated override at the price the bill implies is added to the config file's pricing.models, in force
 * over the run's days, and the records of those days are repriced with it, the audit entry naming the run.
 * --dry-run writes nothing and prints the overrides and the repricing's diff.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseDocument } from 'yaml';
import type { LoadedConfig } from '../config/load';
import { pricingConfigSchema } from '../pricing/config';
import { impliedPrices, type ImpliedPrice } from '../reconcile/implied-prices';
import type { ReconciliationReport } from '../reconcile/report';
import { UserError } from './errors';
import { REPRICE_DIFF_HEADERS, repriceRange } from './reprice-run';
import { withStore } from './store';
import { priceCatalog } from './usage';
import { renderTable } from './table';

/** The config with the overrides appended to pricing.models, as start-up would read it. */
function withOverrides(loaded: LoadedConfig, fixes: ImpliedPrice[]): LoadedConfig {
  const added = pricingConfigSchema.parse({ models: fixes.map((f) => f.override) }).models;
  const current = loaded.config.pricing ?? pricingConfigSchema.parse({});
  const pricing = { ...current, models: [...current.models, ...added] };
  return { ...loaded, config: { ...loaded.config, pricing } };
}

/** Appends the overrides to pricing.models in the config file, its comments and layout kept. */
function writeOverrides(path: string, fixes: ImpliedPrice[]): void {
  const doc = parseDocument(readFileSync(path, 'utf8'));
  for (const f of fixes) doc.addIn(['pricing', 'models'], doc.createNode(f.override));
  writeFileSync(path, String(doc));
}

async function fix(loaded: LoadedConfig, runId: number, dryRun: boolean, json: boolean): Promise<string> {
  return withStore(loaded, async (store) => {
    await store.migrate();
    const run = await store.reconciliationRuns?.().get(runId);
    if (!run?.report) throw new UserError(`no successful reconciliation run ${runId}`);
    const report = JSON.parse(run.report) as ReconciliationReport;
    const fixes = impliedPrices(report, await priceCatalog(loaded));
    if (fixes.length === 0)
      return json
        ? `${JSON.stringify({ run: runId, dry_run: dryRun, overrides: [] })}\n`
        : `run ${runId} has no priced_differently line: nothing to fix\n`;
    const fixed = withOverrides(loaded, fixes);
    const catalog = await priceCatalog(fixed);
    if (!dryRun) writeOverrides(loaded.path, fixes);
    const range = { from: Date.parse(`${report.from}T00:00:00Z`), to: Date.parse(`${report.to}T00:00:00Z`) };
    const reason = `reconciliation run ${runId}: ${fixes.map((f) => `${f.model} billed at ${f.ratio} of the recorded price`).join('; ')}`;
    const { result, diff, logId } = await repriceRange(store, catalog, range, { dryRun, reason });
    if (json) {
      const out = {
        run: runId,
        dry_run: dryRun,
        config: loaded.path,
        overrides: fixes.map((f) => f.override),
        scanned: result.scanned,
        changed: dryRun ? diff.changed : result.updated,
        audit_id: logId ?? null,
      };
      return `${JSON.stringify(out, null, 2)}\n`;
    }
    const table = renderTable(
      REPRICE_DIFF_HEADERS.map((header) => ({ header })),
      diff.rows().map((r) => r.map(String)),
    );
    const overrides = fixes.map((f) => `  - ${JSON.stringify(f.override)}`).join('\n');
    return `${dryRun ? 'would add' : `added to ${loaded.path}`} under pricing.models:\n${overrides}\n${table}\n${
      dryRun
        ? `dry run: ${diff.changed} of ${result.scanned} records would change; nothing was written`
        : `repriced ${report.from} to ${report.to}: ${result.updated} of ${result.scanned} records changed (audit entry ${logId})`
    }\n`;
  });
}

export function registerReconcileFixCommand(program: Command, load: () => LoadedConfig): void {
  program
    .command('reconcile-fix <run>')
    .description(
      "fix the stale prices a reconciliation run found: a dated override at the bill's price, then a reprice of its days",
    )
    .option('--dry-run', 'write nothing: print the overrides and what the repricing would change')
    .option('--json', 'print the result as JSON: run, dry_run, config, overrides, scanned, changed, audit_id')
    .action(async (run: string, opts: { dryRun?: boolean; json?: boolean }) => {
      const id = Number(run);
      if (!Number.isSafeInteger(id) || id < 1)
        throw new UserError('<run> is a reconciliation run id (tollgate reconcile --json prints it)');
      process.stdout.write(await fix(load(), id, Boolean(opts.dryRun), Boolean(opts.json)));
    });
}
