import type { Command } from 'commander';
import { GROUP_BY_MAX, LIMIT_DEFAULT, LIMIT_MAX } from '../admin/query-params';
import type { LoadedConfig } from '../config/load';
import type { PriceCatalog } from '../pricing/catalog';
import { deployProviders } from '../runtime/wiring';
import { repriceRecord } from '../pricing/reprice';
import { planUsageQuery, type UsagePlan } from '../storage';
import type { UsageRecord } from '../records/usage-record';
import type { Repricing, UsageQuery, UsageStore } from '../storage/store';
import { repricingChanges } from '../storage/reprice';
import { errorLine, UserError } from './errors';
import { keyValues } from './key-values';
import { formatUsd } from '../pricing/money';
import { count } from './format';
import { wholeNumber } from './number-option';
import { startProgress } from './progress';
import { withStore } from './store';
import { renderTable, type Column } from './table';
import { reportCsv, reportJson, reportTable, usageReport } from './usage-report';
import { TIME_HELP, timeRange } from './time-range';

const DAY = 24 * 3600 * 1000;

interface UsageOptions {
  groupBy: string;
  from?: string;
  to?: string;
  filter: string[];
  limit: number;
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
async function priceCatalog(loaded: LoadedConfig): Promise<PriceCatalog> {
  try {
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
    .option('--all', 'show every group (no "other" row)')
    .option('--json', 'print the rows as JSON (exact costs, the field names of GET /api/usage)')
    .option('--csv', 'print CSV (the columns of GET /api/usage.csv)')
    .action(async (opts: UsageOptions) => {
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
      const rows = await withStore(
        loaded,
        async (store) => {
          await warnUnknownTags(store, plan);
          return store.queryUsage(query);
        },
        { mustExist: true },
      );
      const report = usageReport(rows, groupBy, limit, query);
      process.stdout.write(opts.json ? reportJson(report) : opts.csv ? reportCsv(report) : reportTable(report));
    });

  usage
    .command('reprice')
    .description(
      'recompute the cost of stored records with the current price catalog (after a price was added or fixed)',
    )
    .option('--from <time>', `start: ${TIME_HELP} (default: the first record)`)
    .option('--to <time>', 'end (default: now)')
    .option('--dry-run', 'change nothing: print the old and new totals by model, and how many records would change')
    .option('--json', 'print the result as JSON')
    .action(async function (this: Command) {
      // Commander gives `usage reprice --from 7d` to the parent, which has a --from of its own: read both.
      const opts = this.optsWithGlobals() as { from?: string; to?: string; json?: boolean; dryRun?: boolean };
      const range = timeRange(opts, () => 0);
      const loaded = load();
      const catalog = await priceCatalog(loaded);
      const diff = new RepriceDiff();
      const result = await withStore(
        loaded,
        async (store) => {
          // The rollups count the records of the range cheaply: the total of the progress.
          const [all] = await store.queryUsage({ ...range, groupBy: [] });
          const progress = startProgress(
            opts.dryRun ? 'usage reprice --dry-run' : 'usage reprice',
            all?.requests ?? 0,
            'records',
          );
          let scanned = 0;
          try {
            return await store.repriceAll((r) => {
              if (++scanned % 1000 === 0) progress.update(scanned);
              const next = repriceRecord(catalog, r);
              diff.add(r, next);
              return opts.dryRun ? undefined : next;
            }, range);
          } finally {
            progress.update(scanned);
            progress.stop();
          }
        },
        { mustExist: true },
      );
      if (opts.json) {
        const changed = opts.dryRun ? diff.changed : result.updated;
        process.stdout.write(
          `${JSON.stringify({ catalog_version: catalog.version, dry_run: Boolean(opts.dryRun), scanned: result.scanned, updated: opts.dryRun ? 0 : changed, would_change: opts.dryRun ? changed : undefined })}\n`,
        );
        return;
      }
      if (opts.dryRun) {
        const columns: Column[] = [
          { header: 'model' },
          { header: 'records', align: 'right' },
          { header: 'changed', align: 'right' },
          { header: 'old cost', align: 'right' },
          { header: 'new cost', align: 'right' },
        ];
        process.stdout.write(
          `${renderTable(
            columns,
            diff.rows().map((row) => row.map((c) => (typeof c === 'number' ? count(c) : c))),
          )}\n`,
        );
        process.stdout.write(
          `\ndry run with catalog ${catalog.version}: ${count(diff.changed)} of ${count(result.scanned)} records would change; nothing was written\n`,
        );
        return;
      }
      process.stdout.write(
        `repriced with catalog ${catalog.version}: ${count(result.updated)} of ${count(result.scanned)} records changed\n`,
      );
    });
}

/** Old and new cost totals by model, for `usage reprice --dry-run`; unknown costs are counted apart, never as $0. */
export class RepriceDiff {
  private readonly byModel = new Map<string, { records: number; changed: number; old: Side; next: Side }>();
  changed = 0;

  add(r: UsageRecord, next: Repricing | undefined): void {
    const model = r.servedModel ?? r.model ?? '(none)';
    let m = this.byModel.get(model);
    if (!m) this.byModel.set(model, (m = { records: 0, changed: 0, old: new Side(), next: new Side() }));
    m.records++;
    m.old.add(r.costPico, r.provenance);
    const after = next ?? r;
    m.next.add(after.costPico, after.provenance);
    if (next && repricingChanges(r, next)) {
      m.changed++;
      this.changed++;
    }
  }

  rows(): (string | number)[][] {
    return [...this.byModel]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([model, m]) => [model, m.records, m.changed, m.old.cell(), m.next.cell()]);
  }
}

/** One side of the diff: the known costs summed, and how many records have none (unpriced). */
class Side {
  private pico = 0n;
  private unknown = 0;
  private counted = 0;

  add(cost: bigint | null, provenance: string): void {
    if (provenance === 'not_counted') return;
    this.counted++;
    if (cost === null) this.unknown++;
    else this.pico += cost;
  }

  cell(): string {
    if (this.counted === 0) return 'not counted';
    if (this.unknown === this.counted) return 'unknown';
    return `${this.unknown > 0 ? '>=' : ''}$${formatUsd(this.pico)}${this.unknown > 0 ? ` (${this.unknown} unpriced)` : ''}`;
  }
}
