/** The PostgreSQL store's rollup upserts (storage/rollup.ts): one statement per rollup table and batch. */
import type { PoolClient } from 'pg';
import { COUNTER_COLUMNS } from './counters';
import { columns, unnest } from './postgres-column-arrays';
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

const DIM_TYPES: Record<string, string> = { hour: 'int8', day: 'int8', month: 'int8', status: 'int4', set_id: 'int8' };
const rollupTypes = (dims: readonly string[]): string[] => [
  ...dims.map((c) => DIM_TYPES[c] ?? 'text'),
  ...COUNTER_COLUMNS.map(() => 'int8'),
];

const UPSERT_BASE = rollupUpsertSql(ROLLUP_TABLE, ROLLUP_DIM_COLUMNS, unnest(rollupTypes(ROLLUP_DIM_COLUMNS)));
const UPSERT_TAGS = rollupUpsertSql(
  TAG_ROLLUP_TABLE,
  TAG_ROLLUP_DIM_COLUMNS,
  unnest(rollupTypes(TAG_ROLLUP_DIM_COLUMNS)),
);
const dailyUpsert = (table: string, dims: readonly string[]) =>
  rollupUpsertSql(
    table,
    dims,
    unnest([...dims.map((c) => DIM_TYPES[c] ?? 'text'), ...DAILY_COUNTER_COLUMNS.map(() => 'int8')]),
    DAILY_COUNTER_COLUMNS,
  );
const UPSERT_DAILY = dailyUpsert(DAILY_TABLE, DAILY_DIM_COLUMNS);
const UPSERT_TAG_DAILY = dailyUpsert(TAG_DAILY_TABLE, TAG_DAILY_DIM_COLUMNS);
const UPSERT_TAG_SET_DAILY = dailyUpsert(TAG_SET_DAILY_TABLE, TAG_SET_DAILY_DIM_COLUMNS);
const UPSERT_TAG_SET_MONTHLY = dailyUpsert(TAG_SET_MONTHLY_TABLE, TAG_SET_MONTHLY_DIM_COLUMNS);

/** Adds the increments to the rollup tables, in transaction `c`. */
export async function applyRollupDeltas(c: PoolClient, deltas: RollupDeltas): Promise<void> {
  if (deltas.base.length)
    await c.query(UPSERT_BASE, columns(deltas.base, ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length));
  if (deltas.tags.length)
    await c.query(UPSERT_TAGS, columns(deltas.tags, TAG_ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length));
  if (deltas.daily.length)
    await c.query(UPSERT_DAILY, columns(deltas.daily, DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length));
  if (deltas.tagDaily.length)
    await c.query(
      UPSERT_TAG_DAILY,
      columns(deltas.tagDaily, TAG_DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length),
    );
  if (deltas.tagSetDaily.length)
    await c.query(
      UPSERT_TAG_SET_DAILY,
      columns(deltas.tagSetDaily, TAG_SET_DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length),
    );
  if (deltas.tagSetMonthly.length)
    await c.query(
      UPSERT_TAG_SET_MONTHLY,
      columns(deltas.tagSetMonthly, TAG_SET_MONTHLY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length),
    );
}
