/**
 * A range of whole UTC days as rows of a monthly rollup and its daily one (usage_tag_set_monthly and
 * usage_tag_set_daily, usage_tag_rollup_monthly and usage_tag_rollup_daily): the whole months from the monthly rows,
 * each partial month at an edge the cheaper way: its days from the daily rows or, when the range holds more of its
 * days than it leaves out, the month's row minus the daily rows of the days left out (a year ending today reads two
 * days of the current month, not twenty-eight). Every counter is a sum, so a month's row minus some of its days is
 * exactly the rest; a group with no record in the range then sums to zero requests.
 */
import { SPLIT_COUNTER_COLUMNS } from '../counters';
import { floorMonth } from '../rollup';
import type { SqlQuery } from './sql';

/** The first UTC month start at or after `ts`. */
function ceilMonth(ts: number): number {
  const m = floorMonth(ts);
  return m === ts ? m : Date.UTC(new Date(m).getUTCFullYear(), new Date(m).getUTCMonth() + 1, 1);
}

export interface MonthPart {
  /** Rows of the monthly table (time column `month`), or of the daily one (`day`). */
  monthly: boolean;
  /** '-' for the days subtracted from a month's row. */
  sign: '' | '-';
  from: number;
  to: number;
}

/** The rows that sum to the range [from, to) of whole days: whole months, and each partial month the cheaper way. */
export function monthParts(from: number, to: number): MonthPart[] {
  const [first, last] = [ceilMonth(from), floorMonth(to)];
  if (first > last) return [{ monthly: false, sign: '', from, to }];
  const parts: MonthPart[] = [{ monthly: true, sign: '', from: first, to: last }];
  for (const [a, b] of [
    [from, first],
    [last, to],
  ]) {
    const [month, next] = [floorMonth(a), ceilMonth(b)];
    if (b - a <= next - month - (b - a)) parts.push({ monthly: false, sign: '', from: a, to: b });
    else
      parts.push(
        { monthly: true, sign: '', from: month, to: next },
        { monthly: false, sign: '-', from: month, to: a },
        { monthly: false, sign: '-', from: b, to: next },
      );
  }
  return parts.filter((p) => p.from < p.to);
}

/**
 * UNION ALL of the parts' rows: `keys` (leading columns), then every counter under its column name, negated on the
 * subtracted days. `where` is the condition besides time (with its parameters, repeated per part).
 */
export function monthPartsUnion(
  tables: { monthly: string; daily: string },
  keys: string,
  where: SqlQuery,
  from: number,
  to: number,
): SqlQuery {
  const parts = monthParts(from, to);
  const select = ({ monthly, sign }: MonthPart) => {
    const at = monthly ? 'month' : 'day';
    const cols = SPLIT_COUNTER_COLUMNS.map((c) => `${sign}${c} AS ${c}`).join(', ');
    const cond = where.sql ? `${where.sql} AND ` : '';
    return `SELECT ${keys}, ${cols} FROM ${monthly ? tables.monthly : tables.daily} WHERE ${cond}${at} >= ? AND ${at} < ?`;
  };
  return {
    sql: parts.map(select).join(' UNION ALL '),
    params: parts.flatMap((p) => [...where.params, p.from, p.to]),
  };
}
