/**
 * What `tollgate usage` prints: the page of groups (most expensive first, `limit` of them) and the rest summed as
 * "other", as a table, as CSV (the columns of GET /api/usage.csv) or as JSON (the rows of GET /api/usage). Every
 * output is built in time linear in the groups, so that a report of tens of thousands of groups prints at once.
 */
import { groupRowJson } from '../admin/serialize';
import { usageCsvChunks } from '../admin/dashboard/csv';
import { addTotals, costStatus, zeroTotals } from '../storage/counters';
import { listCostUnknownCount } from '../storage/list-cost';
import { groupPage } from '../storage/query/group-page';
import type { UsageGroupRow, UsageTotals } from '../storage/store';
import { count, usdCents } from './format';
import { renderTable, type Column } from './table';

export interface UsageReport {
  groupBy: string[];
  /** The page: `limit` groups from rank `offset`, most expensive first. */
  rows: UsageGroupRow[];
  /** The groups not on the page, summed; null when every group is on it. */
  other: (UsageTotals & { groups: number }) | null;
  /** The next page's offset (as GET /api/usage's next_offset); null on the last. */
  nextOffset: number | null;
  /** Every group summed: each grouping partitions the records, so the groups add up to the total. */
  total: UsageTotals;
  from: number;
  to: number;
  filters?: Record<string, string>;
}

/**
 * The report of `rows` (one per group): `limit` groups (Infinity: all) from rank `offset`, paged as GET /api/usage
 * pages them.
 */
export function usageReport(
  rows: UsageGroupRow[],
  groupBy: string[],
  { limit, offset }: { limit: number; offset: number },
  range: { from: number; to: number; filters?: Record<string, string> },
): UsageReport {
  const total = rows.reduce((sum, r) => addTotals(sum, r), zeroTotals());
  const page = groupPage(rows, groupBy, Math.min(limit, rows.length || 1), offset);
  const byCost = page.rows.sort((a, b) =>
    b.costPico > a.costPico ? 1 : b.costPico < a.costPico ? -1 : b.requests - a.requests,
  );
  const { from, to, filters } = range;
  return { groupBy, rows: byCost, other: page.other, nextOffset: page.nextOffset, total, from, to, filters };
}

/**
 * A cost cell, to the cent: "unknown" when no record of the group has a price (never $0), "not counted" when all
 * are audio or images with nothing to price them by, ">=" when some records are unpriced or not counted (a lower
 * bound, so rounded down). --json has the exact amounts.
 */
export function costCell(t: UsageTotals, pico = t.costPico): string {
  const status = costStatus(t);
  if (status === 'unknown') return 'unknown';
  if (status === 'not_counted') return 'not counted';
  return status === 'lower_bound' ? `>=${usdCents(pico, true)}` : usdCents(pico);
}

/** The cost cell at the list price, before negotiated discounts (storage/list-cost.ts). */
const listCostCell = (t: UsageTotals): string => costCell(t, t.costPico + t.discountPico);

/** The summary under the table: requests, cost, and how many records the cost leaves out or estimates. */
export function totalLine(t: UsageTotals): string {
  const notes = [
    t.unknownCostCount ? `${count(t.unknownCostCount)} unpriced (cost unknown, not included)` : '',
    t.notCountedCount ? `${count(t.notCountedCount)} not counted (audio or images, not included)` : '',
    t.estimatedCount ? `${count(t.estimatedCount)} estimated` : '',
    t.partialCount ? `${count(t.partialCount)} partial` : '',
  ].filter(Boolean);
  const cost = costStatus(t) === 'unknown' ? 'cost unknown' : costCell(t);
  const list = t.discountPico === 0n ? '' : `, ${listCostCell(t)} at list price (${usdCents(t.discountPico)} discount)`;
  const unlisted = t.discountPico !== 0n && listCostUnknownCount(t) > 0;
  if (unlisted) notes.push(`${count(listCostUnknownCount(t))} without a list cost, at their cost`);
  return `${count(t.requests)} requests, ${cost}${list}${notes.length ? ` (${notes.join(', ')})` : ''}`;
}

const right = (header: string): Column => ({ header, align: 'right' });

/**
 * A row's counters as table cells. Cache reads and writes are priced differently (a read is cheaper), so apart. The
 * list cost only when a negotiated discount applies somewhere in the report.
 */
const counterCells = (t: UsageTotals, listed: boolean): string[] => [
  ...[t.requests, t.inputTokens, t.outputTokens, t.cacheReadTokens, t.cacheWriteTokens + t.cacheWrite1hTokens].map(
    count,
  ),
  costCell(t),
  ...(listed ? [listCostCell(t)] : []),
  ...[t.unknownCostCount, t.notCountedCount, t.estimatedCount, t.partialCount].map(count),
];

const otherLabel = (groups: number) => `(${count(groups)} other groups)`;

export function reportTable(r: UsageReport): string {
  const listed = r.total.discountPico !== 0n;
  const rows = r.rows.map((row) => [...r.groupBy.map((g) => row.group[g] ?? '(none)'), ...counterCells(row, listed)]);
  if (r.other) {
    const label = r.groupBy.map((_, i) => (i === 0 ? otherLabel(r.other!.groups) : ''));
    rows.push([...label, ...counterCells(r.other, listed)]);
  }
  const columns = [
    ...r.groupBy.map((header): Column => ({ header })),
    ...[
      'requests',
      'input',
      'output',
      'cache read',
      'cache write',
      'cost',
      ...(listed ? ['list cost'] : []),
      'unpriced',
      'not counted',
      'estimated',
      'partial',
    ].map(right),
  ];
  const next = r.nextOffset === null ? '' : `, --offset ${r.nextOffset} the next page`;
  const hint = r.other
    ? `; ${count(r.other.groups)} more groups in the other row: --limit or --all shows them${next}`
    : '';
  return `${renderTable(columns, rows)}\n\n${totalLine(r.total)} from ${new Date(r.from).toISOString()} to ${new Date(r.to).toISOString()}${hint}\n`;
}

/** The CSV of GET /api/usage.csv for the same page. */
export function reportCsv(r: UsageReport): Generator<string> {
  return usageCsvChunks(r.groupBy, r.rows, r.total, false, r.other ?? undefined, r);
}

/** The page's rows as GET /api/usage has them (cost_usd null when unknown, cost_status, counts by provenance). */
export function reportJson(r: UsageReport): string {
  return `${JSON.stringify(r.rows.map(groupRowJson), null, 2)}\n`;
}
