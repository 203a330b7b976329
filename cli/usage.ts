import type { Command } from 'commander';
import { GROUP_BY_MAX, LIMIT_DEFAULT, LIMIT_MAX } from '../admin/query-params';
import { configPath, loadStorageSettings, type LoadedConfig } from '../config/load';
import type { PriceCatalog } from '../pricing/catalog';
import { planUsageQuery, type UsagePlan } from '../storage';
import type { UsageQuery, UsageStore } from '../storage/store';
import { errorLine, UserError } from './errors';
import { keyValues } from './key-values';
import { count } from './format';
import { wholeNumber } from './number-option';
import { REPRICE_DIFF_HEADERS, repriceRange, type RepriceRun } from './reprice-run';
import { withStore } from './store';
import { renderTable, type Column } from './table';
import { writeChunks, writeEveryGroupCsv } from './usage-export';
import { reportCsv, reportJson, reportTable, usageReport } from './usage-report';
import { TIME_HELP, timeRange } from './time-range';

const DAY = 24 * 3600 * 1000;

interface UsageOptions {
  groupBy: string;
  from?: string;
  to?: string;
  filter: string[];
  limit: number;
  offset: number;
  all?: boolean;
  json?: boolean;
  csv?: boolean;
}

/** The store's own checks (a dimension twice, a status that is no HTTP status ...), before anything is opened. */
function checkedPlan(query: UsageQuery): UsagePlan {
  try {
    return planUsageQuery(query);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
}

/**
 * Any name that is not built-in is taken for a tag key, so a misspelt one ("agnet") would silently group
 * everything under "(untagged)": say so when no record carries that tag.
 */
async function warnUnknownTags(store: UsageStore, plan: UsagePlan): Promise<void> {
  const asked = [
    ...new Set([
      ...plan.groupBy.flatMap((d) => (d.kind === 'tag' ? [d.key] : [])),
      ...plan.filters.tags.map((t) => t.key),
    ]),
  ];
  if (asked.length === 0) return;
  const known = await store.listTagKeys();
  for (const key of asked.filter((k) => !known.includes(k))) {
    process.stderr.write(
      `tollgate: warning: no record has a tag "${key}" (tags in the data: ${known.join(', ') || 'none'})\n`,
    );
  }
}

/**
 * The prices start-up uses, provider modules' included; a price file or module that is missing or unreadable is the
 * config's fault, as check-config says.
 */
export async function priceCatalog(loaded: LoadedConfig): Promise<PriceCatalog> {
  try {
    // The providers' modules and prices, loaded by the commands that price only (cli/commands.ts says why).
    const { deployProviders } = await import('../runtime/wiring.js');
    return (await deployProviders(loaded)).prices;
  } catch (err) {
    throw new UserError(`${loaded.path}: pricing: ${errorLine(err)}`, { cause: err });
  }
}

/** `tollgate usage` (grouped spend as a table) and `tollgate usage reprice`. */
export function registerUsageCommands(program: Command, load: () => LoadedConfig): void {
  const usage = program
    .command('usage')
    .description('print spend grouped by any dimension (agent, feature, customer_id, provider, model or any tag)')
    .option('-g, --group-by <dims>', 'comma-separated dimensions', 'provider,model')
    .option('--from <time>', `start: ${TIME_HELP} (default: 30 days before --to)`)
    .option('--to <time>', 'end (default: now)')
    .option(
      '-f, --filter <key=value>',
      'only records with this dimension value (repeatable)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option(
      '--limit <n>',
      `groups to show, most expensive first; the rest in one "other" row (1-${LIMIT_MAX})`,
      wholeNumber(1, LIMIT_MAX),
      LIMIT_DEFAULT,
    )
    .option(
      '--offset <n>',
      "the page's first group, by rank (0: the most expensive); the table names the next page's",
      wholeNumber(0, Number.MAX_SAFE_INTEGER),
      0,
    )
    .option('--all', 'show every group (no "other" row)')
    .option('--json', 'print the rows as JSON (exact costs, the field names of GET /api/usage)')
    .option('--csv', 'print CSV (the columns of GET /api/usage.csv)')
    // A report reads the store alone: only the file's storage settings need to hold (config/load.ts).
    .action((opts: UsageOptions) =>
      printUsage(opts, () => loadStorageSettings(configPath(program.opts<{ config?: string }>().config))),
    );

  registerReprice(usage, load);
}

/** `tollgate usage`'s action: plan the query, read the store, print the report. */
async function printUsage(opts: UsageOptions, load: () => LoadedConfig): Promise<void> {
  const groupBy = opts.groupBy
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (groupBy.length > GROUP_BY_MAX) throw new UserError(`--group-by takes at most ${GROUP_BY_MAX} dimensions`);
  if (opts.json && opts.csv) throw new UserError('--json and --csv: choose one');
  const limit = opts.all ? Infinity : opts.limit;
  const query: UsageQuery = {
    ...timeRange(opts, (to) => to - 30 * DAY),
    groupBy,
    filters: keyValues(opts.filter, '--filter'),
  };
  const plan = checkedPlan(query);
  const loaded = load();
  if (opts.csv && limit === Infinity && !opts.offset) {
    await withStore(
      loaded,
      async (store) => {
        await warnUnknownTags(store, plan);
        await writeEveryGroupCsv(store, query, process.stdout);
      },
      { mustExist: true },
    );
    return;
  }
  const rows = await withStore(
    loaded,
    async (store) => {
      await warnUnknownTags(store, plan);
      return store.queryUsage(query);
    },
    { mustExist: true },
  );
  const report = usageReport(rows, groupBy, { limit, offset: opts.offset }, query);
  if (opts.csv) await writeChunks(process.stdout, reportCsv(report));
  else process.stdout.write(opts.json ? reportJson(report) : reportTable(report));
}

/** `tollgate usage reprice`. */
function registerReprice(usage: Command, load: () => LoadedConfig): void {
  usage
    .command('reprice')
    .description(
      'recompute the cost of stored records with the current price catalog (after a price was added or fixed)',
    )
    .option('--from <time>', `start: ${TIME_HELP} (default: the first record)`)
    .option('--to <time>', 'end (default: now)')
    .option('--dry-run', 'change nothing: print the old and new totals by model, and how many records would change')
    .option('--reason <text>', 'why the records are repriced: kept in the repricing audit with what changed')
    .option('--json', 'print the result as JSON')
    .action(async function (this: Command) {
      // Commander gives `usage reprice --from 7d` to the parent, which has a --from of its own: read both.
      const opts = this.optsWithGlobals() as {
        from?: string;
        to?: string;
        json?: boolean;
        dryRun?: boolean;
        reason?: string;
      };
      const range = timeRange(opts, () => 0);
      const loaded = load();
      const catalog = await priceCatalog(loaded);
      const run = await withStore(
        loaded,
        (store) => repriceRange(store, catalog, range, { dryRun: opts.dryRun, reason: opts.reason ?? 'usage reprice' }),
        { mustExist: true },
      );
      process.stdout.write(repriceOutput(run, catalog.version, opts));
    });
}

/** What `usage reprice` prints: the JSON summary, the dry run's diff by model, or how many records changed. */
function repriceOutput(
  { result, diff, logId }: RepriceRun,
  version: string,
  opts: { json?: boolean; dryRun?: boolean },
): string {
  if (opts.json) {
    const changed = opts.dryRun ? diff.changed : result.updated;
    return `${JSON.stringify({ catalog_version: version, dry_run: Boolean(opts.dryRun), scanned: result.scanned, updated: opts.dryRun ? 0 : changed, would_change: opts.dryRun ? changed : undefined, audit_id: logId ?? undefined })}\n`;
  }
  if (opts.dryRun) {
    const columns: Column[] = REPRICE_DIFF_HEADERS.map((header, i) =>
      i === 0 ? { header } : { header, align: 'right' },
    );
    const rows = diff.rows().map((row) => row.map((c) => (typeof c === 'number' ? count(c) : c)));
    return `${renderTable(columns, rows)}\n\ndry run with catalog ${version}: ${count(diff.changed)} of ${count(result.scanned)} records would change; nothing was written\n`;
  }
  return `repriced with catalog ${version}: ${count(result.updated)} of ${count(result.scanned)} records changed${logId === null ? '' : ` (audit entry ${logId})`}\n`;
}
