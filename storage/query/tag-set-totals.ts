/**
 * Each tag set's counters over a range of whole UTC days, one row per set (a grouping on two tag keys with no
 * value to pick sets by: storage/query/sql.ts joins these totals with the sets' member values).
 *
 * The whole UTC months of the range are read from usage_tag_set_monthly (one row per set and month), not from
 * usage_tag_set_daily (one per set and day). A partial month at an edge is read from the daily rows, or, when the
 * range holds more of its days than it leaves out, as the month's row minus the daily rows of the days left out:
 * a year ending today reads two days of the current month, not twenty-eight. Every counter is a sum, so a month's
 * row minus some of its days is exactly the rest; a set with no record in the range then sums to zero requests and
 * is left out, as it is absent from the daily rows.
 */
import { SPLIT_COUNTER_COLUMNS } from '../counters';
import { TAG_SET_DAILY_TABLE, TAG_SET_MONTHLY_TABLE, floorMonth } from '../rollup';
import type { SqlQuery } from './sql';

/** The first UTC month start at or after `ts`. */
function ceilMonth(ts: number): number {
  const m = floorMonth(ts);
  return m === ts ? m : Date.UTC(new Date(m).getUTCFullYear(), new Date(m).getUTCMonth() + 1, 1);
}

interface Part {
  table: typeof TAG_SET_DAILY_TABLE | typeof TAG_SET_MONTHLY_TABLE;
  /** '-' for the days subtracted from a month's row. */
  sign: '' | '-';
  from: number;
  to: number;
}

/** The rows that sum to the range [from, to): whole months, and each partial month the cheaper way. */
function rangeParts(from: number, to: number): Part[] {
  const [first, last] = [ceilMonth(from), floorMonth(to)];
  if (first > last) return [{ table: TAG_SET_DAILY_TABLE, sign: '', from, to }];
  const parts: Part[] = [{ table: TAG_SET_MONTHLY_TABLE, sign: '', from: first, to: last }];
  for (const [a, b] of [
    [from, first],
    [last, to],
  ]) {
    const [month, next] = [floorMonth(a), ceilMonth(b)];
    if (b - a <= next - month - (b - a)) parts.push({ table: TAG_SET_DAILY_TABLE, sign: '', from: a, to: b });
    else
      parts.push(
        { table: TAG_SET_MONTHLY_TABLE, sign: '', from: month, to: next },
        { table: TAG_SET_DAILY_TABLE, sign: '-', from: month, to: a },
        { table: TAG_SET_DAILY_TABLE, sign: '-', from: b, to: next },
      );
  }
  return parts.filter((p) => p.from < p.to);
}

/** One row per set with records in the range, its counters under their column names. */
export function setTotals(spec: { from: number; to: number }): SqlQuery {
  const cols = SPLIT_COUNTER_COLUMNS;
  const sums = cols.map((col) => `SUM(${col}) AS ${col}`).join(', ');
  const parts = rangeParts(spec.from, spec.to);
  const select = ({ table, sign }: Part) => {
    const at = table === TAG_SET_MONTHLY_TABLE ? 'month' : 'day';
    return `SELECT set_id, ${cols.map((c) => `${sign}${c} AS ${c}`).join(', ')} FROM ${table} WHERE ${at} >= ? AND ${at} < ?`;
  };
  return {
    sql: `SELECT set_id, ${sums} FROM (${parts.map(select).join(' UNION ALL ')}) t GROUP BY set_id HAVING SUM(requests) <> 0`,
    params: parts.flatMap((p) => [p.from, p.to]),
  };
}
