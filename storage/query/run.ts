/**
 * Executes a usage plan through a dialect-neutral `exec`, derives "(untagged)" rows on the
 * tag-rollup path and merges the segments. Group arithmetic happens here in bigint so that
 * totals reconcile exactly whatever the path.
 */
import { toNumber } from '../codec';
import { COUNTERS, addTotals, zeroTotals } from '../counters';
import type { SqlDialect } from '../dialect';
import { UNTAGGED, type UsageGroupRow, type UsageQuery, type UsageTotals } from '../store';
import { planUsageQuery, type BuiltinDim, type Dim, type Segment, type TagDim, type UsagePlan } from './plan';
import { rawAggregateSql, rollupAggregateSql, tagSetAggregateSql, type RollupSpec, type SqlQuery } from './sql';
import { aggregateVia } from './via';

/** Runs one query, returning rows as plain objects (driver types are decoded here). */
export type Exec = (q: SqlQuery) => Promise<Record<string, unknown>[]>;

interface Group {
  bucket: number | null;
  values: (string | null)[];
  totals: UsageTotals;
}

/** Decodes one aggregate row; `fixed` supplies values for groupBy positions the SQL did not select. */
function decodeAggregate(
  d: SqlDialect,
  row: Record<string, unknown>,
  groupBy: Dim[],
  fixed: Map<number, string>,
): Group {
  const values = groupBy.map((dim, i) => {
    const pinned = fixed.get(i);
    if (pinned !== undefined) return pinned;
    const v = row[`g${i}`];
    if (dim.kind === 'tag') return v === null || v === undefined ? UNTAGGED : String(v);
    if (dim.column === 'status') return String(toNumber(v));
    return v === null || v === undefined || v === '' ? null : String(v);
  });
  const totals = zeroTotals();
  for (const c of COUNTERS) {
    if (c.money) (totals as unknown as Record<string, bigint>)[c.field] = d.readMoney(row, c.column);
    else (totals as unknown as Record<string, number>)[c.field] = toNumber(row[c.column]);
  }
  return { bucket: row.bucket === undefined ? null : toNumber(row.bucket), values, totals };
}

class GroupMap {
  readonly groups = new Map<string, Group>();
  add(g: Group, sign: 1 | -1 = 1, key = JSON.stringify([g.bucket, ...g.values])): void {
    const hit = this.groups.get(key);
    if (hit) addTotals(hit.totals, g.totals, sign);
    else
      this.groups.set(key, {
        bucket: g.bucket,
        values: [...g.values],
        totals: addTotals(zeroTotals(), g.totals, sign),
      });
  }
}

export async function runUsageQuery(d: SqlDialect, exec: Exec, q: UsageQuery): Promise<UsageGroupRow[]> {
  const plan = planUsageQuery(q);
  const merged = new GroupMap();
  const parts = await Promise.all(plan.segments.map((s) => runSegment(d, exec, plan, s)));
  for (const groups of parts) for (const g of groups) merged.add(g);
  return [...merged.groups.values()]
    .filter((g) => g.totals.requests !== 0)
    .sort(compareGroups)
    .map((g) => groupRow(plan, g));
}

function groupRow(plan: UsagePlan, g: Group): UsageGroupRow {
  const row: UsageGroupRow = {
    group: Object.fromEntries(plan.groupBy.map((dim, i) => [dim.name, g.values[i]])),
    ...g.totals,
  };
  if (plan.interval) row.bucket = g.bucket ?? undefined;
  return row;
}

/** A row of rankedUsageSql (storage/query/ranked.ts), whose values are decoded already, as runUsageQuery's. */
export function rankedRow(d: SqlDialect, plan: UsagePlan, row: Record<string, unknown>): UsageGroupRow {
  return groupRow(plan, decodeAggregate(d, row, plan.groupBy, new Map()));
}

/** Buckets in time order, then the most expensive groups first, then by group values. */
function compareGroups(a: Group, b: Group): number {
  if (a.bucket !== b.bucket) return (a.bucket ?? 0) - (b.bucket ?? 0);
  if (a.totals.costPico !== b.totals.costPico) return a.totals.costPico > b.totals.costPico ? -1 : 1;
  if (a.totals.requests !== b.totals.requests) return b.totals.requests - a.totals.requests;
  const ka = JSON.stringify(a.values);
  const kb = JSON.stringify(b.values);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * What one segment reads. `parts`: aggregate statements whose rows are groups as they are (`fixed`: the values of the
 * groupBy positions a statement does not select). `remainder`, on the tag-rollup path: the "(untagged)" group of each
 * built-in group (and bucket), the rows of `total` (the base rollup) minus those of `tagged` (the tag rollup summed
 * over all of the tag key's values), the tag's slot `grouped` pinned to "(untagged)"; only the groups left with
 * requests.
 */
export interface SegmentSql {
  parts: { sql: SqlQuery; fixed: Map<number, string> }[];
  remainder?: { total: SqlQuery; tagged: SqlQuery; grouped: number | undefined };
}

/**
 * Only the raw path reads first (how its records are found: aggregateVia); the others answer at once, so that their
 * statements are asked in the same turn, ahead of the raw edges' (the PostgreSQL pool takes them in that order).
 */
export function segmentSql(d: SqlDialect, exec: Exec, plan: UsagePlan, seg: Segment): SegmentSql | Promise<SegmentSql> {
  const none = new Map<number, string>();
  if (seg.path === 'raw') {
    return aggregateVia(d, exec, plan.filters, seg.from, seg.to).then((via) => {
      const sql = rawAggregateSql(d, {
        from: seg.from,
        to: seg.to,
        groupBy: plan.groupBy,
        filters: plan.filters,
        interval: plan.interval,
        via,
      });
      return { parts: [{ sql, fixed: none }] };
    });
  }
  if (seg.path === 'tag-set') {
    // The plan sends only tag groupings and tag filters here.
    const sql = tagSetAggregateSql(d, {
      from: seg.from,
      to: seg.to,
      groupBy: plan.groupBy as TagDim[],
      tags: plan.filters.tags,
      interval: plan.interval,
    });
    return { parts: [{ sql, fixed: none }] };
  }
  const builtins = plan.groupBy.flatMap((dim, index) =>
    dim.kind === 'builtin' ? [{ dim: dim as BuiltinDim, index }] : [],
  );
  const base: RollupSpec = {
    from: seg.from,
    to: seg.to,
    groupBy: builtins,
    builtinFilters: plan.filters.builtins,
    interval: plan.interval,
    daily: seg.path === 'daily',
  };
  if (seg.path === 'rollup' || (seg.path === 'daily' && plan.path === 'rollup')) {
    return { parts: [{ sql: rollupAggregateSql(d, base), fixed: none }] };
  }
  return tagRollupSql(d, plan, base);
}

/** One tag key K: tagged groups from the tag rollup, "(untagged)" as the base rollup's total minus K's tagged sum. */
function tagRollupSql(d: SqlDialect, plan: UsagePlan, base: RollupSpec): SegmentSql {
  const key = plan.tagKey as string;
  const tagIndex = plan.groupBy.findIndex((dim) => dim.kind === 'tag' && dim.key === key);
  const filter = plan.filters.tags.find((t) => t.key === key)?.value;
  const grouped = tagIndex >= 0 ? tagIndex : undefined;

  if (filter !== undefined && filter !== UNTAGGED) {
    // Only records with K = filter: the tag rollup answers alone.
    const sql = rollupAggregateSql(d, { ...base, tag: { key, value: filter } });
    const fixed = grouped === undefined ? new Map<number, string>() : new Map([[grouped, filter]]);
    return { parts: [{ sql, fixed }] };
  }
  const tagged = rollupAggregateSql(d, { ...base, tag: { key, groupIndex: grouped } });
  const remainder = { total: rollupAggregateSql(d, base), tagged, grouped };
  // filter === UNTAGGED wants only the remainder.
  return { parts: filter === undefined ? [{ sql: tagged, fixed: new Map() }] : [], remainder };
}

async function runSegment(d: SqlDialect, exec: Exec, plan: UsagePlan, seg: Segment): Promise<Group[]> {
  const asked = segmentSql(d, exec, plan, seg);
  const { parts, remainder } = asked instanceof Promise ? await asked : asked;
  // The tag rollup's rows serve both its tagged groups and the remainder: read once.
  const read = new Map<SqlQuery, Promise<Record<string, unknown>[]>>();
  const once = (q: SqlQuery) => read.get(q) ?? read.set(q, exec(q)).get(q)!;
  // Every statement at once (a PostgreSQL pool runs them side by side).
  const [partRows, untagged] = await Promise.all([
    Promise.all(parts.map((p) => once(p.sql))),
    remainder ? untaggedRemainder(d, once, plan, remainder) : [],
  ]);
  const out: Group[] = [];
  for (const [i, rows] of partRows.entries())
    for (const r of rows) out.push(decodeAggregate(d, r, plan.groupBy, parts[i].fixed));
  return [...out, ...untagged];
}

async function untaggedRemainder(
  d: SqlDialect,
  exec: Exec,
  plan: UsagePlan,
  { total, tagged, grouped }: NonNullable<SegmentSql['remainder']>,
): Promise<Group[]> {
  const [taggedRows, totalRows] = await Promise.all([exec(tagged), exec(total)]);
  const untaggedFixed = grouped === undefined ? new Map<number, string>() : new Map([[grouped, UNTAGGED]]);
  // Key of the built-in part of a group: bucket + values with K's slot pinned to "(untagged)".
  const remainderKey = (g: Group): string =>
    JSON.stringify([g.bucket, ...g.values.map((v, i) => (i === grouped ? UNTAGGED : v))]);

  const remainder = new GroupMap();
  for (const r of totalRows) {
    const g = decodeAggregate(d, r, plan.groupBy, untaggedFixed);
    remainder.add(g, 1, remainderKey(g));
  }
  for (const r of taggedRows) {
    const g = decodeAggregate(d, r, plan.groupBy, new Map());
    remainder.add(g, -1, remainderKey(g));
  }
  return [...remainder.groups.values()].filter((g) => g.totals.requests !== 0);
}
