/**
 * Tag sets and their daily rollup (storage/tag-sets.ts explains why): queries on two or more tag keys read these
 * instead of joining usage_records with record_tags.
 *
 *   tag_sets             one row per distinct set of tags; canon is the set's canonical text (tagSetKey)
 *   tag_set_members      (set_id, key, value), found by (key, value) for the filters, by (set_id, key) for grouping
 *   usage_tag_set_daily  counters per (set_id, day), money split as in migration 002
 *
 * Keyed by (set_id, day): a filtered query reads the few days of each matching set with one index seek per set.
 * PostgreSQL finds a set by sha256 of its canonical text (a B-tree entry must stay under ~2.7 kB, and 32 tags of
 * 256 characters would not); SQLite indexes the text itself (no such limit). No foreign keys: they would cost a
 * lookup per inserted row, and sets are never deleted.
 *
 * The backfill computes every existing record's set from record_tags (the same rows the raw path reads), builds
 * the canonical text exactly as tagSetKey does, and sums the records per (set, day) with the counters of
 * storage/counters.ts as they are at this version (written out here: a released migration must not change).
 */
import type { Migration } from './index';

const DAY = 86_400_000;

const counterColumns = `requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
  reasoning_tokens, citation_tokens, search_queries, cost_pico_hi, cost_pico_lo, unknown_cost_count, estimated_count,
  partial_count, error_count`;

/** Counter columns as migration 002 declares them (repeated here: a released migration is never edited, nor imported from). */
const counterDdl = (int: string) => `  requests              ${int} NOT NULL,
  input_tokens          ${int} NOT NULL,
  output_tokens         ${int} NOT NULL,
  cache_read_tokens     ${int} NOT NULL,
  cache_write_tokens    ${int} NOT NULL,
  cache_write_1h_tokens ${int} NOT NULL,
  reasoning_tokens      ${int} NOT NULL,
  citation_tokens       ${int} NOT NULL,
  search_queries        ${int} NOT NULL,
  cost_pico_hi          ${int} NOT NULL,
  cost_pico_lo          ${int} NOT NULL,
  unknown_cost_count    ${int} NOT NULL,
  estimated_count       ${int} NOT NULL,
  partial_count         ${int} NOT NULL,
  error_count           ${int} NOT NULL`;

/** Each record's contribution (storage/counters.ts), summed per (canonical text, day) of usage_records `r`. */
const recordSums = `COUNT(*) AS requests,
  SUM(COALESCE(r.input_tokens, 0)) AS input_tokens,
  SUM(COALESCE(r.output_tokens, 0)) AS output_tokens,
  SUM(COALESCE(r.cache_read_tokens, 0)) AS cache_read_tokens,
  SUM(COALESCE(r.cache_write_tokens, 0)) AS cache_write_tokens,
  SUM(COALESCE(r.cache_write_1h_tokens, 0)) AS cache_write_1h_tokens,
  SUM(COALESCE(r.reasoning_tokens, 0)) AS reasoning_tokens,
  SUM(COALESCE(r.citation_tokens, 0)) AS citation_tokens,
  SUM(COALESCE(r.search_queries, 0)) AS search_queries,
  SUM(COALESCE(r.cost_pico, 0) >> 32) AS cost_pico_hi,
  SUM(COALESCE(r.cost_pico, 0) & 4294967295) AS cost_pico_lo,
  SUM(CASE WHEN r.cost_pico IS NULL AND r.provenance <> 'not_counted' THEN 1 ELSE 0 END) AS unknown_cost_count,
  SUM(CASE WHEN r.provenance = 'estimated' THEN 1 ELSE 0 END) AS estimated_count,
  SUM(CASE WHEN r.provenance = 'partial' THEN 1 ELSE 0 END) AS partial_count,
  SUM(CASE WHEN r.error_code IS NOT NULL OR r.status >= 400 THEN 1 ELSE 0 END) AS error_count`;

const day = `r.ts - (((r.ts % ${DAY}) + ${DAY}) % ${DAY})`;

/**
 * The backfill: `canon` is the SQL building a record's canonical text from its record_tags rows `rt`, grouped by
 * record_id; `insertSets` fills tag_sets from the temporary table's distinct texts; `members` expands them.
 */
function backfill(canon: string, insertSets: string, members: string): string {
  return `
CREATE TEMPORARY TABLE tag_set_backfill AS
SELECT COALESCE(t.canon, '[]') AS canon, ${day} AS day,
  ${recordSums}
FROM usage_records r
LEFT JOIN (SELECT rt.record_id, ${canon} AS canon FROM record_tags rt GROUP BY rt.record_id) t ON t.record_id = r.id
GROUP BY COALESCE(t.canon, '[]'), ${day};

${insertSets}

${members}

INSERT INTO usage_tag_set_daily (set_id, day, ${counterColumns})
SELECT s.id, b.day, ${counterColumns.replace(/(\w+)/g, 'b.$1')}
FROM tag_set_backfill b JOIN tag_sets s ON s.canon = b.canon;

DROP TABLE tag_set_backfill;
`;
}

/** The members and the daily rollup, the same in both dialects but for the integer type and SQLite's table options. */
function memberAndRollupTables(int: string, options: string): string {
  return `
CREATE TABLE tag_set_members (
  set_id ${int} NOT NULL,
  key    TEXT NOT NULL,
  value  TEXT NOT NULL,
  PRIMARY KEY (set_id, key)
)${options};
CREATE INDEX tag_set_members_key_value ON tag_set_members (key, value, set_id);

CREATE TABLE usage_tag_set_daily (
  set_id                ${int} NOT NULL,
  day                   ${int} NOT NULL,                  -- epoch ms of the UTC day start
${counterDdl(int)},
  PRIMARY KEY (set_id, day)
)${options};
`;
}

const postgres = `
CREATE TABLE tag_sets (
  id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  canon  TEXT NOT NULL,                              -- canonical text, e.g. [["agent","bot"],["customer_id","acme"]]
  digest BYTEA NOT NULL UNIQUE                       -- sha256(canon): the lookup key
);
${memberAndRollupTables('BIGINT', '')}
${backfill(
  `'[' || string_agg('[' || to_json(rt.key)::text || ',' || to_json(rt.value)::text || ']', ',' ORDER BY rt.key COLLATE "C") || ']'`,
  `INSERT INTO tag_sets (canon, digest)
SELECT canon, sha256(convert_to(canon, 'UTF8')) FROM (SELECT DISTINCT canon FROM tag_set_backfill) c ORDER BY canon COLLATE "C";`,
  `INSERT INTO tag_set_members (set_id, key, value)
SELECT s.id, e ->> 0, e ->> 1 FROM tag_sets s, jsonb_array_elements(s.canon::jsonb) e;`,
)}
ANALYZE tag_sets;
ANALYZE tag_set_members;
ANALYZE usage_tag_set_daily;
`;

const sqlite = `
CREATE TABLE tag_sets (
  id    INTEGER PRIMARY KEY,
  canon TEXT NOT NULL UNIQUE
) STRICT;
${memberAndRollupTables('INTEGER', ' STRICT, WITHOUT ROWID')}
${backfill(
  `'[' || group_concat(json_array(rt.key, rt.value), ',' ORDER BY rt.key) || ']'`,
  `INSERT INTO tag_sets (canon) SELECT DISTINCT canon FROM tag_set_backfill ORDER BY canon;`,
  `INSERT INTO tag_set_members (set_id, key, value)
SELECT s.id, e.value ->> 0, e.value ->> 1 FROM tag_sets s, json_each(s.canon) e;`,
)}`;

export const tagSets: Migration = { version: 4, name: 'tag_sets', postgres, sqlite };
