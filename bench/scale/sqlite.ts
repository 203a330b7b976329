/**
 * The big-store generator for SQLite: records made in JS (bench/scale/record.ts) and written with prepared
 * inserts, one transaction per month, with the tables' indexes set aside (bench/scale/bulk-indexes.ts); tag sets
 * through the store's own code (storage/sqlite-tag-sets.ts); then each month's rollups derived from its records
 * (bench/scale/rollups-sql.ts).
 */
import Database from 'better-sqlite3';
import { rng } from '../../cli/demo-traffic';
import { RECORD_COLUMNS, recordValues } from '../../storage/codec';
import { openStore } from '../../storage';
import { prepareTagSets } from '../../storage/sqlite-tag-sets';
import { TagSetIds } from '../../storage/tag-sets';
import { LOADED_TABLES, dropSqliteIndexes } from './bulk-indexes';
import { byMonth, dayCounts } from './mix';
import { scaleRecord } from './record';
import { deriveRollupsSql } from './rollups-sql';
import type { GenerateOptions } from './postgres';

export async function generateSqlite(path: string, o: GenerateOptions): Promise<void> {
  await (await openStore(`sqlite:${path}`)).close();
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    const cols = [...RECORD_COLUMNS, 'tag_set_id'];
    const insert = db.prepare(
      `INSERT INTO usage_records (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
    );
    const tagSets = prepareTagSets(db, new TagSetIds());
    const found = new Map<string, number>();
    const r = rng(o.seed ?? 40);
    const [records, rollups] = [LOADED_TABLES.slice(0, 1), LOADED_TABLES.slice(1)];
    const rebuildRecords = dropSqliteIndexes(db, records);
    const rebuildRollups = dropSqliteIndexes(db, rollups);
    const months = byMonth(dayCounts(o.records, o.days, o.end));
    let g = 0;
    for (const month of months)
      db.transaction(() => {
        for (const { day, count } of month.days) {
          for (let k = 0; k < count; k++) {
            const rec = scaleRecord(r, g++, day + Math.floor(((k + r()) * 86_400_000) / count));
            const values = recordValues(rec).map((v) => (typeof v === 'boolean' ? Number(v) : v));
            insert.run(...values, tagSets.id(rec, found));
          }
          o.progress?.(g);
        }
      })();
    // The records' index on ts first: each month's rollups then read only that month's records.
    for (const sql of rebuildRecords) db.exec(sql);
    for (const month of months)
      db.transaction(() => {
        for (const sql of deriveRollupsSql(month.from, month.to)) db.exec(sql);
      })();
    for (const sql of rebuildRollups) db.exec(sql);
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}
