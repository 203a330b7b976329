/**
 * CSV of a usage grouping: one line per group (and bucket, with an interval), the same numbers as the
 * JSON of GET /api/usage and as the dashboard's table. Money is the exact decimal cost_usd; a group whose
 * cost is unknown (all its records unpriced or not counted) has an empty cost_usd and cost_share_pct, never 0, and
 * cost_status says whether a group's cost is known, a lower bound (some records unpriced or not counted), unknown
 * or not_counted (all are audio or images with nothing to price them by). list_cost_usd is the cost at the catalog's
 * list price, before negotiated discounts, and discount_usd the difference (storage/list-cost.ts).
 */
import { formatUsd } from '../../pricing/money';
import { costStatus, knownCost } from '../../storage/counters';
import { knownListCost, listCostUnknownCount } from '../../storage/list-cost';
import { NONE, type UsageGroupRow, type UsageTotals } from '../../storage/store';
import { costSharePct } from './share';

export const CSV_COUNTER_COLUMNS = [
  'requests',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'reasoning_tokens',
  'cost_usd',
  'cost_status',
  'cost_share_pct',
  'list_cost_usd',
  'discount_usd',
  'list_cost_unknown_count',
  'unpriced_count',
  'not_counted_count',
  'estimated_count',
  'partial_count',
  'error_count',
] as const;

/**
 * RFC 4180 quoting. A cell that a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a
 * leading apostrophe: tag values come from API clients and must not execute when the file is opened.
 * Numbers are written by this module and never start with one of these.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const usdOrEmpty = (pico: bigint | null): string => (pico === null ? '' : formatUsd(pico));

function counters(t: UsageTotals, total: UsageTotals | undefined): string[] {
  const cost = knownCost(t);
  return [
    String(t.requests),
    String(t.inputTokens),
    String(t.outputTokens),
    String(t.cacheReadTokens),
    String(t.cacheWriteTokens),
    String(t.cacheWrite1hTokens),
    String(t.reasoningTokens),
    cost === null ? '' : formatUsd(cost),
    costStatus(t),
    cost === null ? '' : costSharePct(cost, total?.costPico ?? 0n),
    usdOrEmpty(knownListCost(t)),
    cost === null ? '' : formatUsd(t.discountPico),
    String(listCostUnknownCount(t)),
    String(t.unknownCostCount),
    String(t.notCountedCount),
    String(t.estimatedCount),
    String(t.partialCount),
    String(t.errorCount),
  ];
}

/** The range and the filters an export was made with. */
export interface CsvScope {
  from: number;
  to: number;
  filters?: Record<string, string>;
}

/**
 * The export's range and filters as its last columns, repeated on every line: range_from and range_to (ISO 8601, UTC;
 * `to` excluded), then filter[<dimension>] for each filter. Columns rather than lines above the header, so that the file
 * stays one header line and rectangular rows that any CSV reader takes as they are.
 */
function scopeColumns(scope: CsvScope): { header: string[]; cells: string[] } {
  const filters = Object.entries(scope.filters ?? {});
  return {
    header: ['range_from', 'range_to', ...filters.map(([dim]) => `filter[${dim}]`)],
    cells: [new Date(scope.from).toISOString(), new Date(scope.to).toISOString(), ...filters.map(([, v]) => v)],
  };
}

/** Lines per chunk of a CSV written as it is made: the most an export holds as text at once. */
export const CSV_CHUNK_LINES = 1000;

/**
 * Header line, then the rows in the order given (the API's: most expensive first), then `other` when the rows are one
 * page of the groups: the groups not on it, summed over the range, its first group cell "(N other groups)" and its
 * bucket cell empty. Every line ends with the range and filters (scopeColumns). CRLF line ends. The text comes in
 * chunks of CSV_CHUNK_LINES whole lines, so that an export of every group is never held whole: `add` a row at a time
 * (a chunk when one is full), then `end`.
 */
export class UsageCsv {
  private readonly lines: string[];
  private readonly cells: string[];

  constructor(
    private readonly groupBy: readonly string[],
    private readonly total: UsageTotals | undefined,
    private readonly withBucket: boolean,
    scope: CsvScope,
  ) {
    const made = scopeColumns(scope);
    this.cells = made.cells;
    const header = [...groupBy, ...(withBucket ? ['bucket'] : []), ...CSV_COUNTER_COLUMNS, ...made.header];
    this.lines = [header.map(csvCell).join(',')];
  }

  private chunk(): string {
    return `${this.lines.splice(0).join('\r\n')}\r\n`;
  }

  add(row: UsageGroupRow): string | undefined {
    const groups = this.groupBy.map((name) => row.group[name] ?? NONE);
    const bucket = this.withBucket && row.bucket !== undefined ? [new Date(row.bucket).toISOString()] : [];
    this.lines.push([...groups, ...bucket, ...counters(row, this.total), ...this.cells].map(csvCell).join(','));
    return this.lines.length === CSV_CHUNK_LINES ? this.chunk() : undefined;
  }

  end(other: (UsageTotals & { groups: number }) | undefined): string | undefined {
    if (other) {
      const groups = this.groupBy.map((_, i) => (i === 0 ? `(${other.groups} other groups)` : ''));
      const cells = [...groups, ...(this.withBucket ? [''] : []), ...counters(other, this.total), ...this.cells];
      this.lines.push(cells.map(csvCell).join(','));
    }
    return this.lines.length > 0 ? this.chunk() : undefined;
  }
}

/** UsageCsv of rows at hand, a chunk at a time. */
export function* usageCsvChunks(
  groupBy: readonly string[],
  rows: Iterable<UsageGroupRow>,
  total: UsageTotals | undefined,
  withBucket: boolean,
  other: (UsageTotals & { groups: number }) | undefined,
  scope: CsvScope,
): Generator<string> {
  const csv = new UsageCsv(groupBy, total, withBucket, scope);
  for (const row of rows) {
    const chunk = csv.add(row);
    if (chunk !== undefined) yield chunk;
  }
  const last = csv.end(other);
  if (last !== undefined) yield last;
}
