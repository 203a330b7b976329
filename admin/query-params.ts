import type { ParsedUrlQuery } from 'node:querystring';
import { GatewayError } from '../core/errors';
import type { Interval, UsageFilter } from '../storage/store';

const DAY = 24 * 3600 * 1000;

const one = (q: ParsedUrlQuery, name: string): string | undefined => {
  const v = q[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
};

const bad = (param: string, message: string) => new GatewayError('invalid_body', message, { param });

/** A time given as epoch milliseconds or an ISO 8601 date. */
function time(q: ParsedUrlQuery, name: string, fallback: number): number {
  const raw = one(q, name);
  if (raw === undefined || raw === '') return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(n)) throw bad(name, `${name} must be epoch milliseconds or an ISO 8601 date`);
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
  return { from, to, filters };
}

/** group_by=agent,feature (or repeated), each a built-in dimension or any tag key. */
export function groupByFrom(q: ParsedUrlQuery): string[] {
  const raw = q.group_by;
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  if (list.length > 3) throw bad('group_by', 'group_by takes at most 3 dimensions');
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
  const n = raw === undefined ? 100 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw bad('limit', 'limit must be an integer from 1 to 1000');
  return n;
}

export { one as queryValue };
