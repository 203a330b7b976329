/**
 * The big-store generators load with the indexes of the tables they fill set aside: each index (and, on
 * PostgreSQL, each primary key) is dropped before the load and built again after it from its own definition, read
 * from the catalog. Building an index once from sorted rows is several times cheaper than keeping it up to date row
 * by row, and the store ends with exactly the indexes its migrations made. A run that fails between the two leaves
 * a store without them: drop it and generate again.
 */
import type Database from 'better-sqlite3';
import type { Client } from 'pg';
import {
  DAILY_TABLE,
  DIMS_DAILY_TABLE,
  ROLLUP_TABLE,
  TAG_DAILY_TABLE,
  TAG_MONTHLY_TABLE,
  TAG_ROLLUP_TABLE,
  TAG_SET_DAILY_TABLE,
  TAG_SET_MONTHLY_TABLE,
} from '../../storage/rollup';

/** The tables a generator fills row by row: the records and every rollup. */
export const LOADED_TABLES = [
  'usage_records',
  ROLLUP_TABLE,
  TAG_ROLLUP_TABLE,
  DAILY_TABLE,
  TAG_DAILY_TABLE,
  TAG_SET_DAILY_TABLE,
  TAG_SET_MONTHLY_TABLE,
  DIMS_DAILY_TABLE,
  TAG_MONTHLY_TABLE,
] as const;

/** Drops the indexes and primary keys of `tables`; the statements returned build them again. */
export async function dropPostgresIndexes(c: Client, tables: readonly string[]): Promise<string[]> {
  const keys = await c.query<{ tbl: string; name: string; def: string }>(
    `SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE contype IN ('p', 'u') AND conrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) t)`,
    [tables],
  );
  const indexes = await c.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes i
     WHERE schemaname = current_schema() AND tablename = ANY ($1::text[])
       AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = to_regclass(i.indexname))`,
    [tables],
  );
  for (const k of keys.rows) await c.query(`ALTER TABLE ${k.tbl} DROP CONSTRAINT ${k.name}`);
  for (const i of indexes.rows) await c.query(`DROP INDEX ${i.name}`);
  // A partitioned table's index is listed ON ONLY the parent; built again, it must reach every partition.
  return [
    ...keys.rows.map((k) => `ALTER TABLE ${k.tbl} ADD CONSTRAINT ${k.name} ${k.def}`),
    ...indexes.rows.map((i) => i.def.replace(' ON ONLY ', ' ON ')),
  ];
}

/** Drops the indexes of `tables` (a WITHOUT ROWID table's key is the table itself and stays). */
export function dropSqliteIndexes(db: Database.Database, tables: readonly string[]): string[] {
  const rows = db
    .prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
       AND tbl_name IN (${tables.map(() => '?').join(', ')})`,
    )
    .all(...tables) as { name: string; sql: string }[];
  for (const r of rows) db.exec(`DROP INDEX ${r.name}`);
  return rows.map((r) => r.sql);
}
