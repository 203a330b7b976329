/**
 * The big-store generator for SQLite: records made in JS (bench/scale/record.ts) and written with prepared
 * inserts, one transaction per day; tag sets through the store's own code (storage/sqlite-tag-sets.ts); then the
 * day's rollups derived from its records (bench/scale/rollups-sql.ts) in the same transaction.
 */
import Database from 'better-sqlite3';
import { rng } from '../../cli/demo-traffic';
import { RECORD_COLUMNS, recordValues } from '../../storage/codec';
import { openStore } from '../../storage';
import { prepareTagSets } from '../../storage/sqlite-tag-sets';
import { TagSetIds } from '../../storage/tag-sets';
import { dayCounts } from './mix';
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
    let g = 0;
    for (const { day, count } of dayCounts(o.records, o.days, o.end)) {
      db.transaction(() => {
        for (let k = 0; k < count; k++) {
          const rec = scaleRecord(r, g++, day + Math.floor(((k + r()) * 86_400_000) / count));
          const values = recordValues(rec).map((v) => (typeof v === 'boolean' ? Number(v) : v));
          insert.run(...values, tagSets.id(rec, found));
        }
        for (const sql of deriveRollupsSql(day, day + 86_400_000)) db.exec(sql);
      })();
      o.progress?.(g);
    }
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}
