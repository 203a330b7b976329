/**
 * The summed counters of usage, defined once: the JS contribution of one record (used to maintain
 * the rollups) and the SQL expression computing the same value from a raw row (used by the raw
 * query path) sit side by side so the two paths cannot drift apart.
 */
import type { UsageRecord } from '../records/usage-record';
import type { UsageTotals } from './store';

type MoneyField = 'costPico' | 'discountPico';

interface CounterDef {
  field: keyof UsageTotals;
  /** Exact money (bigint pico-USD): summed without overflow, split in _hi and _lo columns in the daily tables. */
  money?: true;
  /** Column name in the rollup tables and alias in aggregate queries. */
  column: string;
  /** Per-row SQL over usage_records aliased `r`; summed by the raw path. */
  rawSql: string;
  /** The same value computed from a record in JS. */
  of(r: UsageRecord): number | bigint;
}

const tokens = (v: number | null): number => v ?? 0;
const flag = (b: boolean): number => (b ? 1 : 0);

/** True for requests counted as errors: a gateway/upstream error code or an HTTP error status. */
export function isError(r: UsageRecord): boolean {
  return r.errorCode !== null || r.status >= 400;
}

export const COUNTERS: readonly CounterDef[] = [
  { field: 'requests', column: 'requests', rawSql: '1', of: () => 1 },
  {
    field: 'inputTokens',
    column: 'input_tokens',
    rawSql: 'COALESCE(r.input_tokens, 0)',
    of: (r) => tokens(r.inputTokens),
  },
  {
    field: 'outputTokens',
    column: 'output_tokens',
    rawSql: 'COALESCE(r.output_tokens, 0)',
    of: (r) => tokens(r.outputTokens),
  },
  {
    field: 'cacheReadTokens',
    column: 'cache_read_tokens',
    rawSql: 'COALESCE(r.cache_read_tokens, 0)',
    of: (r) => tokens(r.cacheReadTokens),
  },
  {
    field: 'cacheWriteTokens',
    column: 'cache_write_tokens',
    rawSql: 'COALESCE(r.cache_write_tokens, 0)',
    of: (r) => tokens(r.cacheWriteTokens),
  },
  {
    field: 'cacheWrite1hTokens',
    column: 'cache_write_1h_tokens',
    rawSql: 'COALESCE(r.cache_write_1h_tokens, 0)',
    of: (r) => tokens(r.cacheWrite1hTokens),
  },
  {
    field: 'reasoningTokens',
    column: 'reasoning_tokens',
    rawSql: 'COALESCE(r.reasoning_tokens, 0)',
    of: (r) => tokens(r.reasoningTokens),
  },
  {
    field: 'citationTokens',
    column: 'citation_tokens',
    rawSql: 'COALESCE(r.citation_tokens, 0)',
    of: (r) => tokens(r.citationTokens),
  },
  {
    field: 'searchQueries',
    column: 'search_queries',
    rawSql: 'COALESCE(r.search_queries, 0)',
    of: (r) => tokens(r.searchQueries),
  },
  // SUM skips NULL costs, which are counted by unknown_cost_count instead.
  { field: 'costPico', column: 'cost_pico', money: true, rawSql: 'r.cost_pico', of: (r) => r.costPico ?? 0n },
  {
    field: 'unknownCostCount',
    column: 'unknown_cost_count',
    // Unknown cost means unpriced; audio and images with nothing to price them by are "not counted", not unknown.
    rawSql: "CASE WHEN r.cost_pico IS NULL AND r.provenance <> 'not_counted' THEN 1 ELSE 0 END",
    of: (r) => flag(r.costPico === null && r.provenance !== 'not_counted'),
  },
  {
    field: 'estimatedCount',
    column: 'estimated_count',
    rawSql: "CASE WHEN r.provenance = 'estimated' THEN 1 ELSE 0 END",
    of: (r) => flag(r.provenance === 'estimated'),
  },
  {
    field: 'partialCount',
    column: 'partial_count',
    rawSql: "CASE WHEN r.provenance = 'partial' THEN 1 ELSE 0 END",
    of: (r) => flag(r.provenance === 'partial'),
  },
  {
    field: 'errorCount',
    column: 'error_count',
    rawSql: 'CASE WHEN r.error_code IS NOT NULL OR r.status >= 400 THEN 1 ELSE 0 END',
    of: (r) => flag(isError(r)),
  },
  {
    // The provider's own cost figure and the computed one differ by more than 1% (migration 008).
    field: 'costDisagreementCount',
    column: 'cost_disagreement_count',
    rawSql: 'CASE WHEN r.cost_disagrees = 1 THEN 1 ELSE 0 END',
    of: (r) => flag(r.costDisagrees === true),
  },
  {
    // Audio and images with nothing to price them by: no cost, and not an unknown one either (migration 009).
    field: 'notCountedCount',
    column: 'not_counted_count',
    rawSql: "CASE WHEN r.provenance = 'not_counted' THEN 1 ELSE 0 END",
    of: (r) => flag(r.provenance === 'not_counted'),
  },
  {
    // List cost less effective cost over the records that have a list cost (migration 022): a group's list cost is
    // its cost plus this, and listCostCount says how many of its priced records it covers.
    field: 'discountPico',
    column: 'discount_pico',
    money: true,
    rawSql: 'COALESCE(r.list_cost_pico - r.cost_pico, 0)',
    of: (r) => discountOf(r),
  },
  {
    field: 'listCostCount',
    column: 'list_cost_count',
    rawSql: 'CASE WHEN r.list_cost_pico IS NULL THEN 0 ELSE 1 END',
    of: (r) => flag(r.listCostPico != null),
  },
];

/** A record's list cost less its cost; 0 without a list cost (a record written before migration 022, or unpriced). */
function discountOf(r: UsageRecord): bigint {
  const list = r.listCostPico;
  return list == null || r.costPico === null ? 0n : list - r.costPico;
}

export const COUNTER_COLUMNS: readonly string[] = COUNTERS.map((c) => c.column);

export function zeroTotals(): UsageTotals {
  return {
    requests: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    reasoningTokens: 0,
    citationTokens: 0,
    searchQueries: 0,
    costPico: 0n,
    unknownCostCount: 0,
    estimatedCount: 0,
    partialCount: 0,
    errorCount: 0,
    costDisagreementCount: 0,
    notCountedCount: 0,
    discountPico: 0n,
    listCostCount: 0,
  };
}

/** What one record adds to every counter. */
export function contribution(r: UsageRecord): UsageTotals {
  // One object literal, each value from its counter's `of` by name: the writer calls this for every record, and
  // filling the fields in a loop over COUNTERS would make every store megamorphic.
  const of = COUNTER_OF;
  return {
    requests: of.requests(r) as number,
    inputTokens: of.inputTokens(r) as number,
    outputTokens: of.outputTokens(r) as number,
    cacheReadTokens: of.cacheReadTokens(r) as number,
    cacheWriteTokens: of.cacheWriteTokens(r) as number,
    cacheWrite1hTokens: of.cacheWrite1hTokens(r) as number,
    reasoningTokens: of.reasoningTokens(r) as number,
    citationTokens: of.citationTokens(r) as number,
    searchQueries: of.searchQueries(r) as number,
    costPico: of.costPico(r) as bigint,
    unknownCostCount: of.unknownCostCount(r) as number,
    estimatedCount: of.estimatedCount(r) as number,
    partialCount: of.partialCount(r) as number,
    errorCount: of.errorCount(r) as number,
    costDisagreementCount: of.costDisagreementCount(r) as number,
    notCountedCount: of.notCountedCount(r) as number,
    discountPico: of.discountPico(r) as bigint,
    listCostCount: of.listCostCount(r) as number,
  };
}

const COUNTER_OF = Object.fromEntries(COUNTERS.map((c) => [c.field, c.of])) as Record<
  keyof UsageTotals,
  CounterDef['of']
>;

/**
 * into += sign * delta (sign -1 subtracts). Written out field by field: the writer calls it for every rollup row of
 * every record, and a loop over COUNTERS reading fields by name was a visible part of its CPU. A unit test checks
 * that it covers every counter of COUNTERS.
 */
export function addTotals(into: UsageTotals, delta: UsageTotals, sign: 1 | -1 = 1): UsageTotals {
  into.requests += sign * delta.requests;
  into.inputTokens += sign * delta.inputTokens;
  into.outputTokens += sign * delta.outputTokens;
  into.cacheReadTokens += sign * delta.cacheReadTokens;
  into.cacheWriteTokens += sign * delta.cacheWriteTokens;
  into.cacheWrite1hTokens += sign * delta.cacheWrite1hTokens;
  into.reasoningTokens += sign * delta.reasoningTokens;
  into.citationTokens += sign * delta.citationTokens;
  into.searchQueries += sign * delta.searchQueries;
  into.costPico += sign === 1 ? delta.costPico : -delta.costPico;
  into.unknownCostCount += sign * delta.unknownCostCount;
  into.estimatedCount += sign * delta.estimatedCount;
  into.partialCount += sign * delta.partialCount;
  into.errorCount += sign * delta.errorCount;
  into.costDisagreementCount += sign * delta.costDisagreementCount;
  into.notCountedCount += sign * delta.notCountedCount;
  into.discountPico += sign === 1 ? delta.discountPico : -delta.discountPico;
  into.listCostCount += sign * delta.listCostCount;
  return into;
}

/**
 * How much of a group's cost is known: `known` (every record has a cost), `lower_bound` (some lack one, unpriced
 * or not counted: the known sum understates the cost), `unknown` (none has one, and some are unpriced) or
 * `not_counted` (all are audio or images with nothing to price them by).
 */
export type CostStatus = 'known' | 'lower_bound' | 'unknown' | 'not_counted';

export function costStatus(t: UsageTotals): CostStatus {
  const missing = t.unknownCostCount + t.notCountedCount;
  if (missing === 0) return 'known';
  if (missing < t.requests) return 'lower_bound';
  return t.unknownCostCount === 0 ? 'not_counted' : 'unknown';
}

/** The sum of the known costs, or null when no record of the group has a known cost (never shown as $0). */
export function knownCost(t: UsageTotals): bigint | null {
  const status = costStatus(t);
  return status === 'unknown' || status === 'not_counted' ? null : t.costPico;
}

export function isZero(t: UsageTotals): boolean {
  return COUNTERS.every((c) => (c.money ? t[c.field as MoneyField] === 0n : t[c.field] === 0));
}

/** The daily tables' counter columns: each money column as its _hi and _lo halves. */
export const SPLIT_COUNTER_COLUMNS: readonly string[] = COUNTERS.flatMap((c) =>
  c.money ? [`${c.column}_hi`, `${c.column}_lo`] : [c.column],
);

/** Counter values in COUNTER_COLUMNS order (money as bigint). */
export function totalsToArray(t: UsageTotals): (number | bigint)[] {
  return COUNTERS.map((c) => t[c.field]);
}

/** Counter values in SPLIT_COUNTER_COLUMNS order: money (exact, may be negative) as hi = v >> 32, lo = v & (2^32 - 1). */
export function totalsToSplitArray(t: UsageTotals): (number | bigint)[] {
  return COUNTERS.flatMap((c) => {
    const v = t[c.field];
    return c.money ? [(v as bigint) >> 32n, (v as bigint) & 0xffffffffn] : [v];
  });
}
