/** The PostgreSQL store's tag set ids (storage/tag-sets.ts): found or created in the transaction of the records. */
import type { PoolClient } from 'pg';
import type { UsageRecord } from '../records/usage-record';
import { type TagSetIds, tagSetKey } from './tag-sets';

// Tag sets are found by sha256 of their canonical text (migration 004). New ones are inserted in the order given
// (sorted), with their members in the same statement: two instances creating the same sets wait for each other in
// one order, never in a cycle. A set that another transaction inserted first is skipped (DO NOTHING waits for that
// transaction's outcome) and read by FIND_TAG_SETS, a later statement, which sees it committed.
const CREATE_TAG_SETS = `WITH created AS (
  INSERT INTO tag_sets (canon, digest)
  SELECT c, sha256(convert_to(c, 'UTF8')) FROM unnest($1::text[]) WITH ORDINALITY AS u (c, n) ORDER BY n
  ON CONFLICT (digest) DO NOTHING
  RETURNING id, canon
), members AS (
  INSERT INTO tag_set_members (set_id, key, value)
  SELECT created.id, e ->> 0, e ->> 1 FROM created, jsonb_array_elements(created.canon::jsonb) AS e
)
SELECT id, canon FROM created`;
const FIND_TAG_SETS = `SELECT id, canon FROM tag_sets WHERE digest IN (SELECT sha256(convert_to(c, 'UTF8')) FROM unnest($1::text[]) AS u (c))`;

/**
 * The tag set id of each record (in order), creating the sets not yet stored, in transaction `c`: one statement
 * for the sets missing from `cache` (two if another instance created some of them), none when all are cached.
 * Ids read or created go to `found`, the transaction's own map, cached once it commits (the store's withTagSets).
 */
export async function postgresTagSetIds(
  c: PoolClient,
  cache: TagSetIds,
  records: readonly UsageRecord[],
  found: Map<string, number>,
): Promise<number[]> {
  const keys = records.map(tagSetKey);
  const missing = [...new Set(keys.filter((k) => cache.get(k) === undefined && !found.has(k)))].sort();
  if (missing.length) {
    const created = (await c.query<{ id: string; canon: string }>(CREATE_TAG_SETS, [missing])).rows;
    for (const s of created) found.set(s.canon, Number(s.id));
    const rest = missing.filter((k) => !found.has(k));
    if (rest.length)
      for (const s of (await c.query<{ id: string; canon: string }>(FIND_TAG_SETS, [rest])).rows)
        found.set(s.canon, Number(s.id));
  }
  return keys.map((k) => {
    const id = cache.get(k) ?? found.get(k);
    if (id === undefined) throw new Error(`tag set not found after insert: ${k.slice(0, 200)}`);
    return id;
  });
}
