/**
 * Every group of a usage query as one statement, merged and ranked by the database: the rows of GET /api/usage.csv
 * with limit=all, read a page at a time (storage/query/ranked-pages.ts) so that no JS array ever holds them all.
 *
 * The same answer as runUsageQuery (storage/query/run.ts), row for row: each segment's statements (segmentSql) are
 * branches of a UNION ALL, their values decoded as decodeAggregate decodes them (a built-in's '' or NULL is none, a
 * tag's NULL "(untagged)", a status its number as text), the tag-rollup path's "(untagged)" remainder a GROUP BY of
 * the base rollup's rows minus the tag rollup's; then one GROUP BY over all branches, the groups left with requests,
 * in runUsageQuery's order: bucket, cost (exact: on SQLite the high and low halves of its sum, normalised so that
 * nothing overflows), requests, then the JSON text of the group's values (json_array: the same text as
 * JSON.stringify, compared byte by byte; JS compares UTF-16 units, which orders the same but for characters past
 * U+FFFF against U+E000 to U+FFFF at the first difference of two groups of equal cost and requests).
 */
import { COUNTERS } from '../counters';
import type { SqlDialect } from '../dialect';
import { UNTAGGED, type UsageQuery } from '../store';
import { planUsageQuery, type Dim, type UsagePlan } from './plan';
import { segmentSql, type Exec, type SegmentSql } from './run';
import type { SqlQuery } from './sql';

/** The counter columns of an aggregate's rows: money as its high and low halves on SQLite (SqlDialect.sumMoney). */
function counterColumns(d: SqlDialect): string[] {
  return COUNTERS.flatMap((c) => (c.money && d.name === 'sqlite' ? [`${c.column}_hi`, `${c.column}_lo`] : [c.column]));
}

/** A builder's statement with `?` placeholders again (PostgreSQL's are numbered in text order). */
const positional = (d: SqlDialect, q: SqlQuery): SqlQuery =>
  d.name === 'postgres' ? { sql: q.sql.replace(/\$\d+/g, '?'), params: q.params } : q;

/** A selected group value as decodeAggregate reads it. */
function decoded(dim: Dim, col: string): string {
  if (dim.kind === 'tag') return `COALESCE(${col}, '${UNTAGGED}')`;
  if (dim.column === 'status') return `CAST(COALESCE(${col}, 0) AS TEXT)`;
  return `NULLIF(${col}, '')`;
}

/** One branch of the union: a part's rows with every group value decoded (or pinned), counters times `sign`. */
function branch(d: SqlDialect, plan: UsagePlan, part: SqlQuery, fixed: Map<number, string>): SqlQuery {
  const params: unknown[] = [];
  const values = plan.groupBy.map((dim, i) => {
    const pinned = fixed.get(i);
    if (pinned === undefined) return `${decoded(dim, `p.g${i}`)} AS g${i}`;
    params.push(pinned);
    return `CAST(? AS TEXT) AS g${i}`;
  });
  const select = [...(plan.interval ? ['p.bucket AS bucket'] : []), ...values, ...counterColumns(d)];
  const inner = positional(d, part);
  return { sql: `SELECT ${select.join(', ')} FROM (${inner.sql}) p`, params: [...params, ...inner.params] as never };
}

/** The tag-rollup path's "(untagged)" groups: the base rollup's rows minus the tag rollup's, per built-in group. */
function remainderSql(d: SqlDialect, plan: UsagePlan, r: NonNullable<SegmentSql['remainder']>): SqlQuery {
  const keys = [
    ...(plan.interval ? ['bucket'] : []),
    ...plan.groupBy.flatMap((dim, i) => (dim.kind === 'builtin' ? [`g${i}`] : [])),
  ];
  const cols = counterColumns(d);
  const [total, tagged] = [positional(d, r.total), positional(d, r.tagged)];
  const sql = [
    `SELECT ${[...keys, ...cols.map((c) => `SUM(${c}) AS ${c}`)].join(', ')} FROM (`,
    `SELECT ${[...keys, ...cols].join(', ')} FROM (${total.sql}) t`,
    'UNION ALL',
    `SELECT ${[...keys, ...cols.map((c) => `-${c} AS ${c}`)].join(', ')} FROM (${tagged.sql}) t`,
    `) r${keys.length ? ` GROUP BY ${keys.join(', ')}` : ''} HAVING SUM(requests) <> 0`,
  ].join('\n');
  return { sql, params: [...total.params, ...tagged.params] };
}

/** Most expensive first, then most requests, then the group's values as JSON text (see the top of this module). */
function orderBy(d: SqlDialect, plan: UsagePlan): string[] {
  const values = plan.groupBy.map((_, i) => `g${i}`).join(', ');
  // A group whose every record is unpriced sums to NULL: 0, as readMoney reads it.
  const sum = (c: string) => `COALESCE(SUM(${c}), 0)`;
  const cost =
    d.name === 'sqlite'
      ? [`${sum('cost_pico_hi')} + (${sum('cost_pico_lo')} >> 32) DESC`, `${sum('cost_pico_lo')} & 4294967295 DESC`]
      : [`${sum('cost_pico')} DESC`];
  const tie = !values
    ? []
    : d.name === 'sqlite'
      ? [`json_array(${values})`]
      : [`json_build_array(${values})::text COLLATE "C"`];
  return [...(plan.interval ? ['bucket'] : []), ...cost, 'SUM(requests) DESC', ...tie];
}

/** The statement, its rows in runUsageQuery's order; storage/query/run.ts rankedRow decodes them with `plan`. */
export async function rankedUsageSql(
  d: SqlDialect,
  exec: Exec,
  q: UsageQuery,
): Promise<{ plan: UsagePlan; sql: SqlQuery }> {
  const plan = planUsageQuery(q);
  const segments = await Promise.all(plan.segments.map((s) => segmentSql(d, exec, plan, s)));
  const untaggedAt = (grouped: number | undefined) =>
    grouped === undefined ? new Map<number, string>() : new Map([[grouped, UNTAGGED]]);
  const branches = segments.flatMap(({ parts, remainder }) => [
    ...parts.map((p) => branch(d, plan, p.sql, p.fixed)),
    ...(remainder ? [branch(d, plan, remainderSql(d, plan, remainder), untaggedAt(remainder.grouped))] : []),
  ]);
  const keys = [...(plan.interval ? ['bucket'] : []), ...plan.groupBy.map((_, i) => `g${i}`)];
  const cols = counterColumns(d);
  // A range with no segment (to <= from) has no group.
  const union = branches.length
    ? branches.map((b) => b.sql).join('\nUNION ALL\n')
    : `SELECT ${[...keys.map((k) => `NULL AS ${k}`), ...cols.map((c) => `0 AS ${c}`)].join(', ')} WHERE 1 = 0`;
  const sql = [
    `SELECT ${[...keys, ...cols.map((c) => `SUM(${c}) AS ${c}`)].join(', ')}`,
    `FROM (${union}) u`,
    keys.length ? `GROUP BY ${keys.join(', ')}` : '',
    'HAVING SUM(requests) <> 0',
    `ORDER BY ${orderBy(d, plan).join(', ')}`,
  ]
    .filter(Boolean)
    .join('\n');
  return { plan, sql: { sql: d.sql(sql), params: branches.flatMap((b) => b.params) } };
}
