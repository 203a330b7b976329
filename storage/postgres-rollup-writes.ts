/** The PostgreSQL store's rollup upserts (storage/rollup.ts): one statement per rollup table and batch. */
import type { PoolClient } from 'pg';
import { columns, unnest } from './postgres-column-arrays';
import { ROLLUP_TABLES, rollupUpsertSql, type RollupDeltas } from './rollup';

const DIM_TYPES: Record<string, string> = { hour: 'int8', day: 'int8', month: 'int8', status: 'int4', set_id: 'int8' };

const UPSERTS = ROLLUP_TABLES.map(({ delta, table, dims, counters }) => ({
  delta,
  width: dims.length + counters.length,
  sql: rollupUpsertSql(
    table,
    dims,
    unnest([...dims.map((c) => DIM_TYPES[c] ?? 'text'), ...counters.map(() => 'int8')]),
    counters,
  ),
}));

/** Adds the increments to the rollup tables, in transaction `c`. */
export async function applyRollupDeltas(c: PoolClient, deltas: RollupDeltas): Promise<void> {
  for (const { delta, width, sql } of UPSERTS)
    if (deltas[delta].length) await c.query(sql, columns(deltas[delta], width));
}
