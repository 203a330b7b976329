/**
 * A grouping on tag keys with no tag value to pick sets by (two tag keys over a year, say: storage/query/plan.ts
 * sends it to the tag-set path), over a range of whole UTC days and with no series: every tag set is a candidate.
 *
 * The whole UTC months of the range are read from usage_tag_set_monthly (one row per set and month), not from
 * usage_tag_set_daily (one per set and day), and the partial months as storage/query/month-parts.ts says.
 *
 * On PostgreSQL (tagSetGroupsSql) each row is summed straight into its group: the rows are hash-joined with a map
 * from every set to its group (its member values for the grouped keys) and summed per group number. Summing per set
 * first (setTotals, which SQLite keeps: storage/query/sql.ts) held one aggregate of every counter per set (43,226
 * sets at 10M records), which spilled to disk, and then looked each set's members up one by one; per group the
 * aggregate holds a few rows.
 *
 * The group number is the rank of the set's values (DENSE_RANK), one column the planner has no statistics for, so
 * it expects a few hundred groups and hashes them. Grouped by the member values themselves, it expects as many
 * groups as rows (the distinct values of the members' `value` column, over every key, multiplied) and sorts every
 * row to group them. The map starts from tag_sets, whose unique id tells the planner that each row joins one set:
 * from a subquery grouped by set, it expected a hundred times as many rows as it joined, and a cost that turned on
 * JIT compilation (two seconds at a million records).
 */
import type { SqlValue } from '../codec';
import { COUNTERS, SPLIT_COUNTER_COLUMNS } from '../counters';
import type { SqlDialect } from '../dialect';
import { TAG_SET_DAILY_TABLE, TAG_SET_MONTHLY_TABLE } from '../rollup';
import { TAG_SET_MEMBERS_TABLE, TAG_SETS_TABLE } from '../tag-sets';
import { monthPartsUnion } from './month-parts';
import type { TagDim, TagFilter } from './plan';
import type { SqlQuery } from './sql';
import { lacksKey } from './tag-set-match';

/** Every tag set, with its values of `keys` (`g<i>`, NULL for a key it lacks) and its group number. */
function groupMap(keys: string[]): SqlQuery {
  const values = keys.map((_, i) => `m${i}.value`);
  const joins = keys.map((_, i) => `LEFT JOIN ${TAG_SET_MEMBERS_TABLE} m${i} ON m${i}.set_id = t.id AND m${i}.key = ?`);
  return {
    sql: `SELECT t.id AS set_id, ${values.map((v, i) => `${v} AS g${i}`).join(', ')}, DENSE_RANK() OVER (ORDER BY ${values.join(', ')}) AS grp FROM ${TAG_SETS_TABLE} t ${joins.join(' ')}`,
    params: keys,
  };
}

/** The rollup rows summing to the range: `set_id` and the counters (storage/query/month-parts.ts). */
function rangeRows(spec: { from: number; to: number }): SqlQuery {
  const tables = { monthly: TAG_SET_MONTHLY_TABLE, daily: TAG_SET_DAILY_TABLE };
  return monthPartsUnion(tables, 'set_id', { sql: '', params: [] }, spec.from, spec.to);
}

/** One row per set with records in the range, its counters under their column names. */
export function setTotals(spec: { from: number; to: number }): SqlQuery {
  const sums = SPLIT_COUNTER_COLUMNS.map((col) => `SUM(${col}) AS ${col}`).join(', ');
  const rows = rangeRows(spec);
  return {
    sql: `SELECT set_id, ${sums} FROM (${rows.sql}) t GROUP BY set_id HAVING SUM(requests) <> 0`,
    params: rows.params,
  };
}

/**
 * The groups of `groupBy` over [from, to) (whole UTC days), restricted to the sets lacking every `untagged` key
 * (the "(untagged)" filters, the only tag filters of this form), each counter under its column name (money summed
 * as storage/dialect.ts sumSplitMoney says) and each group's values as `g<i>`.
 */
export function tagSetGroupsSql(
  d: SqlDialect,
  spec: { from: number; to: number; groupBy: TagDim[] },
  untagged: TagFilter[],
): SqlQuery {
  const rows = rangeRows(spec);
  const map = spec.groupBy.length ? groupMap(spec.groupBy.map((dim) => dim.key)) : undefined;
  const sums = COUNTERS.map((c) =>
    c.money ? d.sumSplitMoney(`r.${c.column}_hi`, `r.${c.column}_lo`, c.column) : `SUM(r.${c.column}) AS ${c.column}`,
  );
  const sql = [
    `SELECT ${[...spec.groupBy.map((_, i) => `MIN(s.g${i}) AS g${i}`), ...sums].join(',\n  ')}`,
    `FROM (${rows.sql}) r`,
    map ? `JOIN (${map.sql}) s ON s.set_id = r.set_id` : '',
    untagged.length ? `WHERE ${untagged.map(() => lacksKey('r.set_id')).join(' AND ')}` : '',
    map ? 'GROUP BY s.grp' : '',
  ]
    .filter(Boolean)
    .join('\n');
  const params: SqlValue[] = [...rows.params, ...(map?.params ?? []), ...untagged.map((t) => t.key)];
  return { sql: d.sql(sql), params: params.map(d.bind) as SqlValue[] };
}
