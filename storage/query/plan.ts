/**
 * Which tables answer a usage query.
 *
 * Paths (chosen per query, for the whole-hour part of the time range):
 *   rollup      no tag key involved: group by / filter on built-ins only -> usage_rollup_hourly.
 *   tag-rollup  exactly one tag key involved (grouped by it and/or filtered on it), any built-in
 *               grouping and filters -> usage_tag_rollup_hourly for that tag_key. "(untagged)" is
 *               derived per group as usage_rollup_hourly total minus the tagged sum, so it always
 *               reconciles with the totals.
 *   tag-set     two or more distinct tag keys (e.g. group by feature where customer_id=acme), nothing built-in
 *               grouped or filtered, no hourly interval -> whole UTC days from usage_tag_set_daily: the tag
 *               sets matching the tag filters, grouped by their member values (storage/tag-sets.ts); the
 *               partial days at the edges raw.
 *   raw         two or more distinct tag keys with a built-in grouping or filter, or an hourly interval ->
 *               usage_records, tags through each record's tag set (indexes: tag_set_members (key, value,
 *               set_id) then usage_records (tag_set_id, ts) for tag filters, tag_set_members (set_id, key)
 *               for the grouping joins and "(untagged)", usage_records (ts, id, tag_set_id) otherwise).
 *
 * Rollups are hourly, so the partial hours at either end of a range that is not hour-aligned
 * are always read from the raw tables and merged in; dashboards that ask whole hours/days
 * never touch the raw tables on the rollup paths.
 *
 *   daily       (a segment path) when the interval is not hourly, the whole UTC days of the range are read from a
 *               daily table, and only the partial days at the edges from the hourly rollups (and partial hours
 *               raw): on the rollup path usage_rollup_daily (one row per day) or, with a built-in grouped or
 *               filtered, usage_dims_rollup_daily (per day and built-in combination); on the tag-rollup path
 *               when nothing built-in is grouped or filtered, usage_tag_rollup_daily (per tag value and day),
 *               or without a series its whole months from usage_tag_rollup_monthly (storage/query/month-parts.ts).
 */
import {
  NONE,
  SERVED_MODEL_ALIAS,
  type BuiltinDimension,
  type Interval,
  type UsageFilter,
  type UsageQuery,
} from '../store';
import { DAY_MS, HOUR_MS } from '../rollup';

export interface BuiltinDim {
  kind: 'builtin';
  /** The name as asked (key of the result's `group`). */
  name: string;
  /** Column in usage_records and in both rollup tables. */
  column: string;
}
export interface TagDim {
  kind: 'tag';
  name: string;
  key: string;
}
export type Dim = BuiltinDim | TagDim;

/**
 * The column of each built-in dimension in usage_records and the rollups. `model` reads served_model: the model
 * that served (recorded as the requested model unless the response named another, see usage-recorder), so an
 * aggregator's requests group under the model that actually ran; `requested_model` reads the client's model.
 */
const BUILTIN_COLUMNS: Record<BuiltinDimension | typeof SERVED_MODEL_ALIAS, string> = {
  provider: 'provider',
  model: 'served_model',
  requested_model: 'model',
  [SERVED_MODEL_ALIAS]: 'served_model',
  endpoint: 'endpoint',
  workspace: 'workspace_id',
  key_id: 'key_id',
  status: 'status',
};

/** Built-in names win; `tag:<key>` always means a tag (for tags named like a built-in). */
export function parseDimension(name: string): Dim {
  if (typeof name !== 'string' || name.length === 0) throw new Error('dimension names must be non-empty strings');
  if (name.startsWith('tag:')) {
    const key = name.slice(4);
    if (!key) throw new Error(`empty tag key in "${name}"`);
    return { kind: 'tag', name, key };
  }
  const column = Object.hasOwn(BUILTIN_COLUMNS, name)
    ? BUILTIN_COLUMNS[name as keyof typeof BUILTIN_COLUMNS]
    : undefined;
  return column ? { kind: 'builtin', name, column } : { kind: 'tag', name, key: name };
}

export interface BuiltinFilter {
  dim: BuiltinDim;
  /** The value to match; null matches an absent value (filter value NONE). Status values are numbers. */
  value: string | number | null;
}
export interface TagFilter {
  key: string;
  /** UNTAGGED is kept as is and means "record has no such tag". */
  value: string;
}
export interface ParsedFilters {
  builtins: BuiltinFilter[];
  tags: TagFilter[];
}

export function parseFilters(filters: Record<string, string> | undefined): ParsedFilters {
  const out: ParsedFilters = { builtins: [], tags: [] };
  for (const [name, value] of Object.entries(filters ?? {})) {
    if (typeof value !== 'string') throw new Error(`filter ${name} must be a string`);
    const dim = parseDimension(name);
    if (dim.kind === 'tag') {
      const prior = out.tags.find((t) => t.key === dim.key);
      if (prior && prior.value !== value) throw new Error(`conflicting filters on tag ${dim.key}`);
      if (!prior) out.tags.push({ key: dim.key, value });
    } else if (value === NONE) {
      out.builtins.push({ dim, value: null });
    } else if (dim.column === 'status') {
      if (!/^\d{1,3}$/.test(value)) throw new Error(`status filter must be an HTTP status code, got "${value}"`);
      out.builtins.push({ dim, value: Number(value) });
    } else {
      out.builtins.push({ dim, value });
    }
  }
  return out;
}

export type QueryPath = 'rollup' | 'tag-rollup' | 'tag-set' | 'raw';

/** How one time segment is read: the plan's path, or its daily tables for whole days. */
export type SegmentPath = QueryPath | 'daily';

export interface Segment {
  from: number;
  to: number;
  path: SegmentPath;
}

export interface UsagePlan {
  groupBy: Dim[];
  filters: ParsedFilters;
  interval?: Interval;
  /** Path of the whole-hour part of the range (whole-day part for tag-set). */
  path: QueryPath;
  /** The one tag key of a tag-rollup plan. */
  tagKey?: string;
  segments: Segment[];
}

export function checkRange(f: Partial<UsageFilter>): void {
  for (const k of ['from', 'to'] as const) {
    if (f[k] !== undefined && !Number.isSafeInteger(f[k])) throw new Error(`${k} must be epoch milliseconds`);
  }
}

export function planUsageQuery(q: UsageQuery): UsagePlan {
  checkRange(q);
  if (q.interval !== undefined && q.interval !== 'hour' && q.interval !== 'day')
    throw new Error(`unknown interval ${String(q.interval)}`);
  const groupBy = (q.groupBy ?? []).map(parseDimension);
  const seen = new Set<string>();
  for (const d of groupBy) {
    const id = d.kind === 'tag' ? `tag:${d.key}` : d.column;
    if (seen.has(id)) throw new Error(`dimension ${d.name} appears twice in groupBy`);
    seen.add(id);
  }
  const filters = parseFilters(q.filters);
  const tagKeys = new Set<string>([
    ...groupBy.flatMap((d) => (d.kind === 'tag' ? [d.key] : [])),
    ...filters.tags.map((t) => t.key),
  ]);
  const tagsOnly = q.interval !== 'hour' && filters.builtins.length === 0 && groupBy.every((d) => d.kind === 'tag');
  const path: QueryPath =
    tagKeys.size === 0 ? 'rollup' : tagKeys.size === 1 ? 'tag-rollup' : tagsOnly ? 'tag-set' : 'raw';
  // Built-ins have their own daily table (usage_dims_rollup_daily); a tag with built-ins does not.
  const daily = (path === 'rollup' && q.interval !== 'hour') || (path !== 'raw' && tagsOnly);
  const plan: UsagePlan = {
    groupBy,
    filters,
    interval: q.interval,
    path,
    segments: splitRange(q.from, q.to, path, daily),
  };
  if (path === 'tag-rollup') plan.tagKey = [...tagKeys][0];
  return plan;
}

/**
 * Whole days go to the daily tables when allowed (tag-set: its own daily table); whole hours to `path`; the
 * partial hours at the edges raw (tag-set has no hourly table: its partial days are raw).
 */
function splitRange(from: number, to: number, path: QueryPath, daily = false): Segment[] {
  if (to <= from) return [];
  if (daily) {
    const firstDay = Math.ceil(from / DAY_MS) * DAY_MS;
    const lastDay = Math.floor(to / DAY_MS) * DAY_MS;
    const whole: SegmentPath = path === 'tag-set' ? 'tag-set' : 'daily';
    if (firstDay < lastDay)
      return [
        ...splitRange(from, firstDay, path),
        { from: firstDay, to: lastDay, path: whole },
        ...splitRange(lastDay, to, path),
      ];
  }
  if (path === 'raw' || path === 'tag-set') return [{ from, to, path: 'raw' }];
  const firstFull = Math.ceil(from / HOUR_MS) * HOUR_MS;
  const lastFull = Math.floor(to / HOUR_MS) * HOUR_MS;
  if (firstFull >= lastFull) return [{ from, to, path: 'raw' }];
  const out: Segment[] = [];
  if (from < firstFull) out.push({ from, to: firstFull, path: 'raw' });
  out.push({ from: firstFull, to: lastFull, path });
  if (lastFull < to) out.push({ from: lastFull, to, path: 'raw' });
  return out;
}
