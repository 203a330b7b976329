import type { ParsedUrlQuery } from 'node:querystring';
import { GatewayError } from '../core/errors';
import { decodeCursor } from '../storage/query/list';
import { parseFilters, planUsageQuery } from '../storage/query/plan';
import type { Interval, UsageFilter } from '../storage/store';

const DAY = 24 * 3600 * 1000;
/** The largest time a Date holds (ECMAScript: 100,000,000 days either side of 1970). */
const LAST_DATE_MS = 8.64e15;

/** Page size of GET /api/requests: default and largest. */
export const LIMIT_DEFAULT = 100;
export const LIMIT_MAX = 1000;
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
  if (!Number.isFinite(n) || Math.abs(n) > LAST_DATE_MS)
    throw bad(name, `${name} must be epoch milliseconds or an ISO 8601 date`);
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

export function limitFrom(q: ParsedUrlQuery): number {
  const raw = one(q, 'limit');
  const n = raw === undefined ? LIMIT_DEFAULT : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > LIMIT_MAX)
    throw bad('limit', `limit must be an integer from 1 to ${LIMIT_MAX}`);
  return n;
}

/** The next_cursor of a previous page of GET /api/requests, or null for the first page. */
export function cursorFrom(q: ParsedUrlQuery): string | null {
  const raw = one(q, 'cursor');
  if (raw === undefined || raw === '') return null;
  checked('cursor', () => decodeCursor(raw));
  return raw;
}

export { one as queryValue };
