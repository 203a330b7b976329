/**
 * Each record carries its tag set's id (usage_records.tag_set_id, storage/tag-sets.ts) instead of one record_tags
 * row per tag.
 *
 * Why: record_tags cost the writer two B-tree inserts per tag (its (record_id, key) key and its (key, value, ts)
 * index): with three tags, six of the ten index entries a record wrote, and about half of the SQLite writer's CPU.
 * The set id is one column and one index entry per record, and it answers what record_tags did: tag filters
 * through the sets carrying the value (tag_set_members (key, value, set_id)), then (tag_set_id, ts); tag grouping
 * and "(untagged)" through tag_set_members (set_id, key).
 *
 *   usage_records_tag_set_ts  (tag_set_id, ts): a filtered query reads each matching set's records in the range
 *   usage_records_ts          (ts, id, tag_set_id) instead of (ts, id): a query filtered by a common tag value
 *                             scans by time and tests the set from the index, without reading each record
 *                             (storage/query/via.ts chooses between the two)
 *
 * The backfill builds every record's canonical text from its record_tags rows exactly as migration 004 did (and as
 * tagSetKey does), creates the sets 004 has not seen (none unless a canonical text differed), and gives records
 * without tags the empty set '[]'. The column stays nullable in both dialects (SQLite cannot add a NOT NULL column
 * without a default); every write sets it.
 *
 * An instance of an earlier build cannot write to the migrated database (it inserts into record_tags): upgrade
 * every instance together. Its records wait in its queue and spill file meanwhile, and are written after its
 * restart on the new build.
 */
import type { Migration } from './index';

/** The same in both dialects once the temporary table record_set (record_id, set_id) holds every record's set. */
const finish = `
DROP TABLE record_tags;
DROP INDEX usage_records_ts;
CREATE INDEX usage_records_ts ON usage_records (ts, id, tag_set_id);
CREATE INDEX usage_records_tag_set_ts ON usage_records (tag_set_id, ts);
`;

const postgres = `
ALTER TABLE usage_records ADD COLUMN tag_set_id BIGINT;

CREATE TEMPORARY TABLE record_canon AS
SELECT rt.record_id,
  '[' || string_agg('[' || to_json(rt.key)::text || ',' || to_json(rt.value)::text || ']', ',' ORDER BY rt.key COLLATE "C") || ']' AS canon
FROM record_tags rt GROUP BY rt.record_id;

INSERT INTO tag_sets (canon, digest)
SELECT canon, sha256(convert_to(canon, 'UTF8')) FROM (SELECT canon FROM record_canon UNION SELECT '[]') c ORDER BY canon COLLATE "C"
ON CONFLICT (digest) DO NOTHING;
INSERT INTO tag_set_members (set_id, key, value)
SELECT s.id, e ->> 0, e ->> 1 FROM tag_sets s, jsonb_array_elements(s.canon::jsonb) e
WHERE NOT EXISTS (SELECT 1 FROM tag_set_members m WHERE m.set_id = s.id);

-- One pass over usage_records: PostgreSQL writes a new version of every row it updates.
UPDATE usage_records r SET tag_set_id = x.set_id
FROM (
  SELECT c.record_id, s.id AS set_id FROM record_canon c JOIN tag_sets s ON s.digest = sha256(convert_to(c.canon, 'UTF8'))
  UNION ALL
  SELECT u.id, e.id FROM usage_records u, tag_sets e
  WHERE e.digest = sha256(convert_to('[]', 'UTF8')) AND NOT EXISTS (SELECT 1 FROM record_canon c WHERE c.record_id = u.id)
) x
WHERE x.record_id = r.id;
DROP TABLE record_canon;
${finish}
ANALYZE usage_records;
`;

const sqlite = `
ALTER TABLE usage_records ADD COLUMN tag_set_id INTEGER;

CREATE TEMPORARY TABLE record_canon (record_id TEXT PRIMARY KEY, canon TEXT NOT NULL) STRICT, WITHOUT ROWID;
INSERT INTO record_canon (record_id, canon)
SELECT rt.record_id, '[' || group_concat(json_array(rt.key, rt.value), ',' ORDER BY rt.key) || ']'
FROM record_tags rt GROUP BY rt.record_id;

INSERT INTO tag_sets (canon)
SELECT canon FROM (SELECT canon FROM record_canon UNION SELECT '[]') c
WHERE NOT EXISTS (SELECT 1 FROM tag_sets s WHERE s.canon = c.canon) ORDER BY canon;
INSERT INTO tag_set_members (set_id, key, value)
SELECT s.id, e.value ->> 0, e.value ->> 1 FROM tag_sets s, json_each(s.canon) e
WHERE NOT EXISTS (SELECT 1 FROM tag_set_members m WHERE m.set_id = s.id);

UPDATE usage_records SET tag_set_id = COALESCE(
  (SELECT s.id FROM record_canon c JOIN tag_sets s ON s.canon = c.canon WHERE c.record_id = usage_records.id),
  (SELECT id FROM tag_sets WHERE canon = '[]'));
DROP TABLE record_canon;
${finish}`;

export const recordTagSet: Migration = { version: 5, name: 'record_tag_set', postgres, sqlite };
