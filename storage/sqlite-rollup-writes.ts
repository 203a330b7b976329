/** The SQLite store's rollup upserts (storage/rollup.ts): statements prepared once, one run per rollup row. */
import type Database from 'better-sqlite3';
import { ROLLUP_TABLES, rollupUpsertSql, type RollupDeltas } from './rollup';
import { placeholders } from './sqlite-exec';

/** A function adding increments to the rollup tables, inside the caller's write transaction. */
export function prepareRollupUpserts(db: Database.Database): (deltas: RollupDeltas) => void {
  const upserts = ROLLUP_TABLES.map(({ delta, table, dims, counters }) => ({
    delta,
    statement: db.prepare(
      rollupUpsertSql(table, dims, `VALUES (${placeholders(dims.length + counters.length)})`, counters),
    ),
  }));
  return (deltas: RollupDeltas): void => {
    // Rows bound as arguments, as the records are (storage/sqlite-writes.ts): cheaper than one array.
    for (const { delta, statement } of upserts) for (const row of deltas[delta]) statement.run(...row);
  };
}
