/**
 * SQL turning a store at the latest schema back into what an earlier build left, with the same records in it, so
 * that a test can run the migrations that upgrade it:
 *   version 6  no storage_marks; on PostgreSQL usage_records one plain table with primary key (id), as migration 007
 *              found it
 *   version 4  records without tag_set_id, one record_tags row per string tag (as migration 001 created it and the
 *              writer filled it until migration 005), usage_records_ts on (ts, id)
 *   version 3  the same, without the tag-set tables of migration 004
 * Versions 3 and 4 have no quarantine table (migration 006) either; none has the columns of migrations 008 and 009,
 * nor the alert outbox of migration 010, nor the reconciliation runs of migration 014, nor 015's tables, nor 016's
 * batch jobs, nor 017's generation_id, nor 018's index by day, nor 019's upstream_ms, nor 021's monthly tag-set
 * rollup, nor 022's list cost.
 */
import { MIGRATIONS } from '../../storage/migrations';

type Dialect = 'sqlite' | 'postgres';

/** The migration versions from `first` on: what migrate() applies to a store left at version first - 1. */
export function versionsFrom(first: number): number[] {
  return MIGRATIONS.map((m) => m.version).filter((v) => v >= first);
}

/**
 * Migrations 008, 009, 012, 017 and 019's columns dropped, records and rollups as every earlier build left them, migration
 * 010's alert outbox, 013's runtime budgets and spend freezes, 014's reconciliation runs, 015's schedule and reprice
 * log, 016's batch jobs, 018's index, 021's monthly rollup and 022's list cost dropped, and none
 * recorded as applied; `droppedTables` are rollup tables the caller drops itself.
 */
export function undo008Sql(droppedTables: readonly string[] = []): string {
  return [
    'DROP TABLE IF EXISTS usage_tag_set_monthly;',
    'DROP INDEX IF EXISTS usage_tag_set_daily_day;',
    'DROP INDEX keys_updated_seq;',
    'ALTER TABLE keys DROP COLUMN updated_seq;',
    'DROP TABLE alert_outbox;',
    'DROP TABLE runtime_budgets;',
    'DROP TABLE spend_freezes;',
    'DROP TABLE reconciliation_runs;',
    'DROP TABLE reconciliation_schedule;',
    'DROP TABLE reprice_log;',
    'DROP TABLE batch_jobs;',
    ...['service_tier', 'input_audio_tokens', 'output_audio_tokens', 'generation_id', 'upstream_ms'].map(
      (c) => `ALTER TABLE usage_records DROP COLUMN ${c};`,
    ),
    'ALTER TABLE usage_records DROP COLUMN list_cost_pico;',
    ...['usage_source', 'provider_cost_pico', 'cost_disagrees', 'tool_calls', 'price_id'].map(
      (c) => `ALTER TABLE usage_records DROP COLUMN ${c};`,
    ),
    ...[
      'usage_rollup_hourly',
      'usage_tag_rollup_hourly',
      'usage_rollup_daily',
      'usage_tag_rollup_daily',
      'usage_tag_set_daily',
    ]
      .filter((t) => !droppedTables.includes(t))
      .flatMap((t) => [
        `ALTER TABLE ${t} DROP COLUMN cost_disagreement_count;`,
        `ALTER TABLE ${t} DROP COLUMN not_counted_count;`,
        `ALTER TABLE ${t} DROP COLUMN list_cost_count;`,
        ...(t.endsWith('_hourly')
          ? [`ALTER TABLE ${t} DROP COLUMN discount_pico;`]
          : [`ALTER TABLE ${t} DROP COLUMN discount_pico_hi;`, `ALTER TABLE ${t} DROP COLUMN discount_pico_lo;`]),
      ]),
    'DELETE FROM schema_migrations WHERE version IN (8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22);',
  ].join('\n');
}

const RECORD_TAGS: Record<Dialect, string> = {
  sqlite: `CREATE TABLE record_tags (
  record_id TEXT NOT NULL REFERENCES usage_records (id) ON DELETE CASCADE,
  key TEXT NOT NULL, value TEXT NOT NULL, ts INTEGER NOT NULL,
  PRIMARY KEY (record_id, key)
) STRICT, WITHOUT ROWID;
INSERT INTO record_tags (record_id, key, value, ts)
SELECT r.id, e.key, e.value, r.ts FROM usage_records r, json_each(r.tags) e WHERE e.type = 'text';`,
  postgres: `CREATE TABLE record_tags (
  record_id TEXT NOT NULL REFERENCES usage_records (id) ON DELETE CASCADE,
  key TEXT NOT NULL, value TEXT NOT NULL, ts BIGINT NOT NULL,
  PRIMARY KEY (record_id, key)
);
INSERT INTO record_tags (record_id, key, value, ts)
SELECT r.id, e.key, e.value #>> '{}', r.ts FROM usage_records r, jsonb_each(r.tags) e WHERE jsonb_typeof(e.value) = 'string';`,
};

const BEFORE_RETENTION: Record<Dialect, string> = {
  sqlite: 'DROP TABLE storage_marks;',
  postgres: `DROP TABLE storage_marks;
ALTER TABLE usage_records RENAME TO usage_records_partitioned;
CREATE TABLE usage_records (LIKE usage_records_partitioned INCLUDING DEFAULTS);
INSERT INTO usage_records SELECT * FROM usage_records_partitioned;
DROP TABLE usage_records_partitioned;
ALTER TABLE usage_records ADD PRIMARY KEY (id);
CREATE INDEX usage_records_ts ON usage_records (ts, id, tag_set_id);
CREATE INDEX usage_records_workspace_ts ON usage_records (workspace_id, ts, id);
CREATE INDEX usage_records_tag_set_ts ON usage_records (tag_set_id, ts);`,
};

export function olderSchemaSql(dialect: Dialect, version: 3 | 4 | 6): string {
  if (version === 6)
    return `${undo008Sql()}
${BEFORE_RETENTION[dialect]}
DELETE FROM schema_migrations WHERE version > 6;`;
  return [
    undo008Sql(),
    BEFORE_RETENTION[dialect],
    RECORD_TAGS[dialect],
    'CREATE INDEX record_tags_key_value_ts ON record_tags (key, value, ts);',
    'DROP INDEX usage_records_tag_set_ts;',
    'DROP INDEX usage_records_ts;',
    'ALTER TABLE usage_records DROP COLUMN tag_set_id;',
    'CREATE INDEX usage_records_ts ON usage_records (ts, id);',
    ...(version === 3
      ? ['DROP TABLE usage_tag_set_daily;', 'DROP TABLE tag_set_members;', 'DROP TABLE tag_sets;']
      : []),
    'DROP TABLE quarantined_records;',
    `DELETE FROM schema_migrations WHERE version > ${version};`,
  ].join('\n');
}
