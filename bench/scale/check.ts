/**
 * The generator checked against the gateway's own write path: the records of a range are read back from the
 * generated store, written to an empty store of the same dialect through UsageStore.insertBatch (batches of 500,
 * as the gateway writes), and both stores' contents of that range are compared table by table: every record
 * column (the tag set by its canonical text, not its id), the tag sets and members, and every rollup row (the
 * daily tables' money as hi * 2^32 + lo, which only the sum fixes). The range must be whole UTC days.
 */
import { recordFromRow } from '../../storage/codec';
import { RECORD_COLUMNS } from '../../storage/codec';
import { COUNTER_COLUMNS } from '../../storage/counters';
import { DAILY_COUNTER_COLUMNS, DIMS_DAILY_DIM_COLUMNS, ROLLUP_DIM_COLUMNS } from '../../storage/rollup';
import type { UsageStore } from '../../storage/store';

export type Rows = (sql: string) => Promise<Record<string, unknown>[]>;

const DAILY_SUMS = DAILY_COUNTER_COLUMNS.filter((c) => !c.startsWith('cost_pico'))
  .map((c) => `t.${c}`)
  .concat(['t.cost_pico_hi * 4294967296 + t.cost_pico_lo AS cost']);
const DIMS = ROLLUP_DIM_COLUMNS.join(', ');
const DAY_DIMS = DIMS_DAILY_DIM_COLUMNS.join(', ');

/**
 * One query per table, each giving the range's rows in a stable order and without store-specific ids. The monthly
 * rollup's rows cover whole months: compared only when `months` (both stores hold nothing outside the range).
 */
function snapshotQueries(from: number, to: number, months = false): Record<string, string> {
  const hours = `hour >= ${from} AND hour < ${to}`;
  const days = `t.day >= ${from} AND t.day < ${to}`;
  const cols = RECORD_COLUMNS.map((c) => `r.${c}`).join(', ');
  return {
    records: `SELECT ${cols}, s.canon FROM usage_records r JOIN tag_sets s ON s.id = r.tag_set_id
      WHERE r.ts >= ${from} AND r.ts < ${to} ORDER BY r.id`,
    tag_sets: `SELECT DISTINCT s.canon, m.key, m.value FROM usage_records r JOIN tag_sets s ON s.id = r.tag_set_id
      JOIN tag_set_members m ON m.set_id = s.id WHERE r.ts >= ${from} AND r.ts < ${to} ORDER BY 1, 2`,
    usage_rollup_hourly: `SELECT ${DIMS}, ${COUNTER_COLUMNS.join(', ')} FROM usage_rollup_hourly WHERE ${hours}
      ORDER BY ${DIMS}`,
    usage_tag_rollup_hourly: `SELECT tag_key, tag_value, ${DIMS}, ${COUNTER_COLUMNS.join(', ')}
      FROM usage_tag_rollup_hourly WHERE ${hours} ORDER BY tag_key, tag_value, ${DIMS}`,
    usage_rollup_daily: `SELECT t.day, ${DAILY_SUMS.join(', ')} FROM usage_rollup_daily t WHERE ${days} ORDER BY t.day`,
    usage_tag_rollup_daily: `SELECT t.tag_key, t.tag_value, t.day, ${DAILY_SUMS.join(', ')} FROM usage_tag_rollup_daily t
      WHERE ${days} ORDER BY 1, 2, 3`,
    usage_tag_set_daily: `SELECT s.canon, t.day, ${DAILY_SUMS.join(', ')} FROM usage_tag_set_daily t
      JOIN tag_sets s ON s.id = t.set_id WHERE ${days} ORDER BY 1, 2`,
    usage_dims_rollup_daily: `SELECT ${DAY_DIMS}, ${DAILY_SUMS.join(', ')} FROM usage_dims_rollup_daily t WHERE ${days}
      ORDER BY ${DAY_DIMS}`,
    ...(months && {
      usage_tag_rollup_monthly: `SELECT t.tag_key, t.tag_value, t.month, ${DAILY_SUMS.join(', ')}
      FROM usage_tag_rollup_monthly t WHERE t.month < ${to} ORDER BY 1, 2, 3`,
      usage_tag_set_monthly: `SELECT s.canon, t.month, ${DAILY_SUMS.join(', ')} FROM usage_tag_set_monthly t
      JOIN tag_sets s ON s.id = t.set_id WHERE t.month < ${to} ORDER BY 1, 2`,
    }),
  };
}

/** Rows as text lines (every value through String: pg's int8 strings and SQLite's bigints compare alike). */
const lines = (rows: Record<string, unknown>[]) =>
  rows.map((r) =>
    JSON.stringify(
      Object.values(r).map((v) => (v === null ? null : typeof v === 'object' ? JSON.stringify(v) : String(v))),
    ),
  );

export interface CheckResult {
  records: number;
  /** Rows compared per table. */
  rows: Record<string, number>;
  /** Per table that differs: the first differing line of each side. */
  differences: Record<string, [generated: string | undefined, writePath: string | undefined]>;
}

/** Writes the range's records of `generated` to `empty` through insertBatch, then compares both. */
export async function checkAgainstWritePath(
  generated: Rows,
  empty: { store: UsageStore; rows: Rows },
  from: number,
  to: number,
  months = false,
): Promise<CheckResult> {
  const records = (await generated(snapshotQueries(from, to).records)).map(recordFromRow);
  for (let i = 0; i < records.length; i += 500) await empty.store.insertBatch(records.slice(i, i + 500));
  return { records: records.length, ...(await compareStores(generated, empty.rows, from, to, months)) };
}

/** Both stores' rows of the range, table by table: how many, and the first difference of each table that differs. */
export async function compareStores(
  a: Rows,
  b: Rows,
  from: number,
  to: number,
  months = false,
): Promise<Omit<CheckResult, 'records'>> {
  const result: Omit<CheckResult, 'records'> = { rows: {}, differences: {} };
  for (const [table, sql] of Object.entries(snapshotQueries(from, to, months))) {
    const [x, y] = [lines(await a(sql)), lines(await b(sql))];
    result.rows[table] = x.length;
    const i = x.findIndex((line, k) => line !== y[k]);
    if (i >= 0 || x.length !== y.length) {
      const k = i >= 0 ? i : Math.min(x.length, y.length);
      result.differences[table] = [x[k], y[k]];
    }
  }
  return result;
}
