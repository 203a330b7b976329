/**
 * Each tag set's counters over a range of whole UTC days, one row per set (a grouping on two tag keys with no
 * value to pick sets by: storage/query/sql.ts joins these totals with the sets' member values).
 *
 * The whole UTC months of the range are read from usage_tag_set_monthly (one row per set and month), not from
 * usage_tag_set_daily (one per set and day), and the partial months as storage/query/month-parts.ts says. A set
 * with no record in the range sums to zero requests and is left out, as it is absent from the daily rows.
 */
import { TAG_SET_DAILY_TABLE, TAG_SET_MONTHLY_TABLE } from '../rollup';
import { SPLIT_COUNTER_COLUMNS } from '../counters';
import { monthPartsUnion } from './month-parts';
import type { SqlQuery } from './sql';

/** One row per set with records in the range, its counters under their column names. */
export function setTotals(spec: { from: number; to: number }): SqlQuery {
  const sums = SPLIT_COUNTER_COLUMNS.map((col) => `SUM(${col}) AS ${col}`).join(', ');
  const tables = { monthly: TAG_SET_MONTHLY_TABLE, daily: TAG_SET_DAILY_TABLE };
  const rows = monthPartsUnion(tables, 'set_id', { sql: '', params: [] }, spec.from, spec.to);
  return {
    sql: `SELECT set_id, ${sums} FROM (${rows.sql}) t GROUP BY set_id HAVING SUM(requests) <> 0`,
    params: rows.params,
  };
}
