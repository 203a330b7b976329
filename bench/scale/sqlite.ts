/**
 * The big-store generator for SQLite: records made in JS (bench/scale/record.ts) and written with prepared
 * multi-row inserts, one transaction per month, with the tables' indexes set aside (bench/scale/bulk-indexes.ts);
 * tag sets through the store's own code (storage/sqlite-tag-sets.ts), each set's id kept by its shared tags object;
 * then each month's rollups derived from its records (bench/scale/rollups-sql.ts).
 */
import Database from 'better-sqlite3';
import { rng } from '../../cli/demo-traffic';
import { RECORD_COLUMNS, recordValues } from '../../storage/codec';
import { openStore } from '../../storage';
import { prepareTagSets } from '../../storage/sqlite-tag-sets';
import { TagSetIds } from '../../storage/tag-sets';
import type { UsageRecord } from '../../records/usage-record';
import { LOADED_TABLES, dropSqliteIndexes } from './bulk-indexes';
import { byMonth, dayCounts } from './mix';
import { scaleRecord } from './record';
import { deriveRollupsSql } from './rollups-sql';
import type { GenerateOptions } from './postgres';

/** Records per INSERT statement: 100 rows of one value per column stay far below SQLite's 32,766 bound parameters. */
const ROWS_PER_INSERT = 100;

/** Writes records in statements of ROWS_PER_INSERT rows; flush() writes what is left with single-row statements. */
function recordWriter(db: Database.Database) {
  const cols = [...RECORD_COLUMNS, 'tag_set_id'];
  const row = `(${cols.map(() => '?').join(', ')})`;
  const insert = (rows: number) =>
    db.prepare(`INSERT INTO usage_records (${cols.join(', ')}) VALUES ${Array(rows).fill(row).join(', ')}`);
  const [many, one] = [insert(ROWS_PER_INSERT), insert(1)];
  const tagSets = prepareTagSets(db, new TagSetIds());
  const found = new Map<string, number>();
  const setIds = new Map<UsageRecord['tags'], number>();
  let values: unknown[] = [];
  let rows = 0;
  const flush = () => {
    for (let i = 0; i < values.length; i += cols.length) one.run(values.slice(i, i + cols.length));
    [values, rows] = [[], 0];
  };
  const add = (rec: UsageRecord) => {
    let setId = setIds.get(rec.tags);
    if (setId === undefined) setIds.set(rec.tags, (setId = tagSets.id(rec, found)));
    for (const v of recordValues(rec)) values.push(typeof v === 'boolean' ? Number(v) : v);
    values.push(setId);
    if (++rows === ROWS_PER_INSERT) {
      many.run(values);
      [values, rows] = [[], 0];
    }
  };
  return { add, flush };
}

export async function generateSqlite(path: string, o: GenerateOptions): Promise<void> {
  await (await openStore(`sqlite:${path}`)).close();
  const db = new Database(path);
  try {
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    db.pragma('temp_store = MEMORY');
    const writer = recordWriter(db);
    const r = rng(o.seed ?? 40);
    const [records, rollups] = [LOADED_TABLES.slice(0, 1), LOADED_TABLES.slice(1)];
    const rebuildRecords = dropSqliteIndexes(db, records);
    const rebuildRollups = dropSqliteIndexes(db, rollups);
    const months = byMonth(dayCounts(o.records, o.days, o.end));
    let g = 0;
    for (const month of months)
      db.transaction(() => {
        for (const { day, count } of month.days) {
          for (let k = 0; k < count; k++)
            writer.add(scaleRecord(r, g++, day + Math.floor(((k + r()) * 86_400_000) / count)));
          o.progress?.(g);
        }
        writer.flush();
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
