/** The SQLite store's tag set ids (storage/tag-sets.ts): found or created in the write transaction of the records. */
import type Database from 'better-sqlite3';
import type { UsageRecord } from '../records/usage-record';
import { type TagSetIds, tagSetKey, tagSetMembers } from './tag-sets';

export interface SqliteTagSets {
  checkSchema(): void;
  id(r: UsageRecord, found: Map<string, number>): number;
}

/**
 * id(r, found): the id of a record's tag set, created with its members when new; called inside a write
 * transaction, which collects the ids it found or created in `found`, cached once it commits (the store's withTagSets).
 * checkSchema() at the start of each transaction drops the cache when the schema changed since it was filled
 * (e.g. a migration rebuilt the tables from another connection): set ids never change otherwise.
 */
export function prepareTagSets(db: Database.Database, cache: TagSetIds): SqliteTagSets {
  const schemaVersion = db.prepare('PRAGMA schema_version').pluck();
  const find = db.prepare('SELECT id FROM tag_sets WHERE canon = ?').pluck();
  const insertSet = db.prepare('INSERT INTO tag_sets (canon) VALUES (?)');
  const insertMember = db.prepare('INSERT INTO tag_set_members (set_id, key, value) VALUES (?, ?, ?)');
  let cachedFor: unknown;
  const checkSchema = (): void => {
    const version = schemaVersion.get();
    if (version !== cachedFor) cache.clear();
    cachedFor = version;
  };
  const id = (r: UsageRecord, found: Map<string, number>): number => {
    const key = tagSetKey(r);
    let id = cache.get(key) ?? found.get(key);
    if (id !== undefined) return id;
    id = find.get(key) as number | undefined;
    if (id === undefined) {
      id = Number(insertSet.run(key).lastInsertRowid);
      for (const [k, v] of tagSetMembers(key)) insertMember.run(id, k, v);
    }
    found.set(key, id);
    return id;
  };
  return { checkSchema, id };
}
