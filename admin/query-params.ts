import type { ParsedUrlQuery } from 'node:querystring';
import { GatewayError } from '../core/errors';
import { decodeCursor } from '../storage/query/list';
import { parseFilters, planUsageQuery } from '../storage/query/plan';
import { DAY_MS, HOUR_MS } from '../storage/rollup';
import type { Interval, UsageFilter } from '../storage/store';
import type { UsageParams } from './reads/read-ops';

const DAY = 24 * 3600 * 1000;
/** The times an answer can write back as RFC 3339 date-times (four-digit years): years 0000 to 9999. */
const FIRST_TIME_MS = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_TIME_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** Page size (records, groups, keys, budgets): default and largest. */
export const LIMIT_DEFAULT = 100;
export const LIMIT_MAX = 1000;
/**
 * Time buckets one answer may have (an interval's hours or days from..to, empty ones included): far beyond any range
 * the dashboard asks for (hours up to 3 days, days beyond), it stops a range of millennia from filling the heap.
 */
export const BUCKETS_MAX = 10_000;
/** Rows one grouped answer with an interval may have: its page of groups times its buckets. */
export const INTERVAL_ROWS_MAX = 100_000;
/** Dimensions one usage query may group by. */
export const GROUP_BY_MAX = 3;

const one = (q: ParsedUrlQuery, name: string): string | undefined => {
  const v = q[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
};

const bad = (param: string, message: string) => new GatewayError('invalid_body', message, { param });

/** The store's own check of a query part, its refusal turned into a 400 naming the parameter. */
function checked(param: string, check: () => unknown): void {
  try {
    check();
  } catch (err) {
    throw bad(param, (err as Error).message);
  }
}

/** A time given as epoch milliseconds or an ISO 8601 date. */
function time(q: ParsedUrlQuery, name: string, fallback: number): number {
  const raw = one(q, name);
  if (raw === undefined || raw === '') return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(n)) throw bad(name, `${name} must be epoch milliseconds or an ISO 8601 date`);
  if (n < FIRST_TIME_MS || n > LAST_TIME_MS)
    throw bad(
      name,
      `${name} must be within the years 0000 to 9999 (epoch milliseconds ${FIRST_TIME_MS} to ${LAST_TIME_MS})`,
    );
  return n;
}

/** from/to (default: the last 30 days) and every filter[<dimension>]=<value>. */
export function filterFrom(q: ParsedUrlQuery, now = Date.now()): UsageFilter {
  const to = time(q, 'to', now);
  const from = time(q, 'from', to - 30 * DAY);
  if (from >= to) throw bad('from', 'from must be before to');
  const filters: Record<string, string> = {};
  for (const key of Object.keys(q)) {
    const m = /^filter\[(.+)\]$/.exec(key);
    if (m) filters[m[1]] = one(q, key)!;
  }
  for (const [name, value] of Object.entries(filters))
    checked(`filter[${name}]`, () => parseFilters({ [name]: value }));
  checked('filter', () => parseFilters(filters));
  return { from, to, filters };
}

/** group_by=agent,feature (or repeated), each a built-in dimension or any tag key. */
export function groupByFrom(q: ParsedUrlQuery): string[] {
  const raw = q.group_by;
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : [])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length > GROUP_BY_MAX) throw bad('group_by', `group_by takes at most ${GROUP_BY_MAX} dimensions`);
  checked('group_by', () => planUsageQuery({ from: 0, to: 1, groupBy: list }));
  return list;
}

export function intervalFrom(q: ParsedUrlQuery): Interval | undefined {
  const raw = one(q, 'interval');
  if (raw === undefined || raw === '') return undefined;
  if (raw !== 'hour' && raw !== 'day') throw bad('interval', 'interval must be hour or day');
  return raw;
}

/** Start buckets of an interval over [from, to): the first is the one holding `from`. */
export function bucketStarts(filter: UsageFilter, interval: Interval): { first: number; size: number; count: number } {
  const size = interval === 'hour' ? HOUR_MS : DAY_MS;
  const first = Math.floor(filter.from / size) * size;
  return { first, size, count: Math.ceil((filter.to - first) / size) };
}

/** Refuses a range holding more than BUCKETS_MAX buckets of `interval` (400 range_too_large, naming the limit). */
export function checkBuckets(filter: UsageFilter, interval: Interval): number {
  const { count } = bucketStarts(filter, interval);
  if (count > BUCKETS_MAX) {
    throw new GatewayError(
      'range_too_large',
      `from..to holds ${count} ${interval} buckets, more than the ${BUCKETS_MAX} one answer may have: shorten the range or use a longer interval`,
      { param: 'from' },
    );
  }
  return count;
}

/** The first group of the page: offset=<n> (default 0), the next_offset of the previous page. */
export function offsetFrom(q: ParsedUrlQuery, name = 'offset'): number {
  const raw = one(q, name);
  if (raw === undefined || raw === '') return 0;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw bad(name, `${name} must be a non-negative integer`);
  return n;
}

export function limitFrom(q: ParsedUrlQuery, name = 'limit'): number {
  const raw = one(q, name);
  const n = raw === undefined ? LIMIT_DEFAULT : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > LIMIT_MAX)
    throw bad(name, `${name} must be an integer from 1 to ${LIMIT_MAX}`);
  return n;
}

/**
 * GET /api/usage and /api/usage.csv: range, filters, group_by, interval, and the page of groups (limit, offset). With
 * an interval the range holds at most BUCKETS_MAX buckets, and the page's rows (limit x buckets) INTERVAL_ROWS_MAX.
 */
export function usageParamsFrom(q: ParsedUrlQuery, { allowAll = false } = {}): UsageParams {
  const filter = filterFrom(q);
  const groupBy = groupByFrom(q);
  const interval = intervalFrom(q);
  // limit=all (the CSV export): every group, however many, read a page at a time (admin/reads/read-ops.ts usageCsv).
  const limit = allowAll && one(q, 'limit') === 'all' ? Infinity : limitFrom(q);
  const offset = offsetFrom(q);
  const search = searchFrom(q);
  if (interval) {
    const buckets = checkBuckets(filter, interval);
    if (limit === Infinity) return { filter, groupBy, interval, limit, offset, search };
    const groups = groupBy.length ? limit : 1;
    if (groups * buckets > INTERVAL_ROWS_MAX) {
      throw new GatewayError(
        'range_too_large',
        `${groups} groups x ${buckets} ${interval} buckets would be up to ${groups * buckets} rows, more than the ${INTERVAL_ROWS_MAX} one answer may have: shorten the range, use a longer interval or a smaller limit`,
        { param: 'limit' },
      );
    }
  }
  return { filter, groupBy, interval, limit, offset, search };
}

/** Longest search=<text> one grouping takes. */
export const SEARCH_MAX = 200;

/** search=<text>: the groups whose values hold it (case-insensitive); '' for every group. */
function searchFrom(q: ParsedUrlQuery): string {
  const raw = (one(q, 'search') ?? '').trim();
  if (raw.length > SEARCH_MAX) throw bad('search', `search takes at most ${SEARCH_MAX} characters`);
  return raw;
}

/** The next_cursor of a previous page of GET /api/requests, or null for the first page. */
export function cursorFrom(q: ParsedUrlQuery): string | null {
  const raw = one(q, 'cursor');
  if (raw === undefined || raw === '') return null;
  checked('cursor', () => decodeCursor(raw));
  return raw;
}

export { one as queryValue };
