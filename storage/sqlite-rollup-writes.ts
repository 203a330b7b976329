/** The SQLite store's rollup upserts (storage/rollup.ts): statements prepared once, one run per rollup row. */
import type Database from 'better-sqlite3';
import { COUNTER_COLUMNS } from './counters';
import {
  DAILY_COUNTER_COLUMNS,
  DAILY_DIM_COLUMNS,
  DAILY_TABLE,
  ROLLUP_DIM_COLUMNS,
  ROLLUP_TABLE,
  TAG_DAILY_DIM_COLUMNS,
  TAG_DAILY_TABLE,
  TAG_ROLLUP_DIM_COLUMNS,
  TAG_ROLLUP_TABLE,
  TAG_SET_DAILY_DIM_COLUMNS,
  TAG_SET_DAILY_TABLE,
  TAG_SET_MONTHLY_DIM_COLUMNS,
  TAG_SET_MONTHLY_TABLE,
  rollupUpsertSql,
  type RollupDeltas,
} from './rollup';
import { placeholders } from './sqlite-exec';

/** A function adding increments to the rollup tables, inside the caller's write transaction. */
export function prepareRollupUpserts(db: Database.Database): (deltas: RollupDeltas) => void {
  const baseSource = `VALUES (${placeholders(ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length)})`;
  const tagSource = `VALUES (${placeholders(TAG_ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length)})`;
  const upsertBase = db.prepare(rollupUpsertSql(ROLLUP_TABLE, ROLLUP_DIM_COLUMNS, baseSource));
  const upsertTag = db.prepare(rollupUpsertSql(TAG_ROLLUP_TABLE, TAG_ROLLUP_DIM_COLUMNS, tagSource));
  const daily = (table: string, dims: readonly string[]) =>
    db.prepare(
      rollupUpsertSql(
        table,
        dims,
        `VALUES (${placeholders(dims.length + DAILY_COUNTER_COLUMNS.length)})`,
        DAILY_COUNTER_COLUMNS,
      ),
    );
  const upsertDaily = daily(DAILY_TABLE, DAILY_DIM_COLUMNS);
  const upsertTagDaily = daily(TAG_DAILY_TABLE, TAG_DAILY_DIM_COLUMNS);
  const upsertTagSetDaily = daily(TAG_SET_DAILY_TABLE, TAG_SET_DAILY_DIM_COLUMNS);
  const upsertTagSetMonthly = daily(TAG_SET_MONTHLY_TABLE, TAG_SET_MONTHLY_DIM_COLUMNS);
  return (deltas: RollupDeltas): void => {
    // Rows bound as arguments, as the records are (storage/sqlite-writes.ts): cheaper than one array.
    for (const row of deltas.base) upsertBase.run(...row);
    for (const row of deltas.tags) upsertTag.run(...row);
    for (const row of deltas.daily) upsertDaily.run(...row);
    for (const row of deltas.tagDaily) upsertTagDaily.run(...row);
    for (const row of deltas.tagSetDaily) upsertTagSetDaily.run(...row);
    for (const row of deltas.tagSetMonthly) upsertTagSetMonthly.run(...row);
  };
}
