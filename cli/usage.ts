import type { Command } from 'commander';
import { groupRowJson } from '../admin/serialize';
import type { LoadedConfig } from '../config/load';
import { deployProviders } from '../runtime/wiring';
import { formatUsd } from '../pricing/money';
import { repriceRecord } from '../pricing/reprice';
import { addTotals, costStatus, zeroTotals } from '../storage/counters';
import type { UsageTotals } from '../storage/store';
import { withStore } from './store';
import { renderTable } from './table';

const DAY = 24 * 3600 * 1000;

function parseTime(text: string | undefined, fallback: number): number {
  if (!text) return fallback;
  const rel = /^(\d+)([hd])$/.exec(text); // 24h, 7d: that long ago
  if (rel) return Date.now() - Number(rel[1]) * (rel[2] === 'h' ? 3600_000 : DAY);
  const t = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(t)) throw new Error(`cannot read the time "${text}" (use 24h, 7d, an ISO date or epoch ms)`);
  return t;
}

function parseFilters(list: string[]): Record<string, string> {
  return Object.fromEntries(
    list.map((f) => {
      const i = f.indexOf('=');
      if (i <= 0) throw new Error(`--filter takes key=value, got "${f}"`);
      return [f.slice(0, i), f.slice(i + 1)];
    }),
  );
}

/**
 * A cost cell: every digit of the exact amount ($0.000000 would hide a real cost of $0.0000003), "unknown"
 * when no record of the group has a price (never $0), ">=" when some records are unpriced (a lower bound).
 */
export function costCell(t: UsageTotals): string {
  const status = costStatus(t);
  if (status === 'unknown') return 'unknown';
  return `${status === 'lower_bound' ? '>=' : ''}$${formatUsd(t.costPico)}`;
}

/** The summary under the table: requests, cost, and how many records the cost leaves out or estimates. */
export function totalLine(t: UsageTotals): string {
  const notes = [
    t.unknownCostCount ? `${t.unknownCostCount} unpriced (cost unknown, not included)` : '',
    t.estimatedCount ? `${t.estimatedCount} estimated` : '',
    t.partialCount ? `${t.partialCount} partial` : '',
  ].filter(Boolean);
  const cost = costStatus(t) === 'unknown' ? 'cost unknown' : costCell(t);
  return `${t.requests} requests, ${cost}${notes.length ? ` (${notes.join(', ')})` : ''}`;
}

/** `tollgate usage` (grouped spend as a table) and `tollgate usage reprice`. */
export function registerUsageCommands(program: Command, load: () => LoadedConfig): void {
  const usage = program
    .command('usage')
    .description('print spend grouped by any dimension (agent, feature, customer_id, provider, model or any tag)')
    .option('-g, --group-by <dims>', 'comma-separated dimensions', 'provider,model')
    .option('--from <time>', 'start: 24h, 7d, an ISO date or epoch ms', '30d')
    .option('--to <time>', 'end (default now)')
    .option('-f, --filter <key=value>', 'only records with this dimension value (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { groupBy: string; from: string; to?: string; filter: string[]; json?: boolean }) => {
      const groupBy = opts.groupBy.split(',').map((s) => s.trim()).filter(Boolean);
      const to = parseTime(opts.to, Date.now());
      const query = { from: parseTime(opts.from, to - 30 * DAY), to, groupBy, filters: parseFilters(opts.filter) };
      const rows = await withStore(load(), (store) => store.queryUsage(query));
      rows.sort((a, b) => (b.costPico > a.costPico ? 1 : b.costPico < a.costPico ? -1 : b.requests - a.requests));
      if (opts.json) {
        // The same rows as GET /api/usage (cost_usd null when unknown, cost_status, counts by provenance).
        process.stdout.write(`${JSON.stringify(rows.map(groupRowJson), null, 2)}\n`);
        return;
      }
      // Cache reads and writes are priced differently (a read is cheaper than input, a write dearer), so apart.
      const table = rows.map((r) => [
        ...groupBy.map((g) => r.group[g] ?? '(none)'),
        r.requests, r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens + r.cacheWrite1hTokens,
        costCell(r), r.unknownCostCount, r.estimatedCount, r.partialCount,
      ]);
      // Each grouping partitions the records (one value per dimension per record), so its rows add up to the total.
      const total = rows.reduce((sum, r) => addTotals(sum, r), zeroTotals());
      const headers = [...groupBy, 'requests', 'input', 'output', 'cache read', 'cache write', 'cost', 'unpriced', 'estimated', 'partial'];
      process.stdout.write(`${renderTable(headers, table)}\n`);
      process.stdout.write(`\n${totalLine(total)} from ${new Date(query.from).toISOString()} to ${new Date(to).toISOString()}\n`);
    });

  usage
    .command('reprice')
    .description('recompute the cost of stored records with the current price catalog (after a price was added or fixed)')
    .option('--from <time>', 'start: 24h, 7d, an ISO date or epoch ms', '3650d')
    .option('--to <time>', 'end (default now)')
    .action(async (opts: { from: string; to?: string }) => {
      const loaded = load();
      const catalog = (await deployProviders(loaded)).prices; // the prices start-up uses, provider modules' included
      const to = parseTime(opts.to, Date.now());
      const result = await withStore(loaded, (store) => store.repriceAll((r) => repriceRecord(catalog, r), { from: parseTime(opts.from, 0), to }));
      process.stdout.write(`repriced with catalog ${catalog.version}: ${result.updated} of ${result.scanned} records changed\n`);
    });
}
