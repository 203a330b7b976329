/**
 * Retention of usage records (storage/retention.ts).
 *
 *   storage_marks  (name, value): the retention's cut-off (records_kept_from), so that every process and the CLI
 *                  know which records may be gone. Both dialects.
 *
 * PostgreSQL: usage_records becomes a table partitioned by month on ts (declarative RANGE partitioning), so that
 * retention drops a month whose records are all past the cut-off as one table instead of deleting its rows one by
 * one (which leaves dead rows for VACUUM and writes every index entry again). The existing table is converted with
 * its data: renamed, its rows copied into the new one, dropped.
 *
 *   usage_records_yYYYYmMM  one partition per UTC month [first day 00:00, first day of the next month), created
 *                           here for every month that has records plus the current and the next month; the
 *                           maintenance job (storage/postgres-partitions.ts) keeps creating them ahead of time
 *   usage_records_default   the DEFAULT partition: a record of a month without a partition (a clock far off, a
 *                           spill file replayed long after) lands here, so that no insert ever fails
 *
 * A partitioned table's primary key must contain the partition key: it is (id, ts) instead of (id). A record keeps
 * its id and ts for life (a retried batch sends the same record), so inserts stay idempotent with ON CONFLICT
 * (id, ts). The indexes are those of migration 005, built after the copy (faster than maintaining them row by row).
 *
 * An instance of an earlier build cannot write to the migrated table (its ON CONFLICT (id) matches no unique index):
 * upgrade every instance together, as for migration 005. SQLite keeps its single table: its retention deletes in
 * batches.
 */
import type { Migration } from './index';

const marks = (int: string, options: string) => `
CREATE TABLE storage_marks (
  name  TEXT NOT NULL PRIMARY KEY,
  value ${int} NOT NULL
)${options};
`;

/** Epoch ms of a UTC timestamp without time zone. */
const epochMs = (t: string) => `(extract(epoch FROM ${t}) * 1000)::bigint`;

const postgres = `
${marks('BIGINT', '')}
ALTER TABLE usage_records RENAME TO usage_records_unpartitioned;
ALTER TABLE usage_records_unpartitioned RENAME CONSTRAINT usage_records_pkey TO usage_records_unpartitioned_pkey;
DROP INDEX usage_records_ts;
DROP INDEX usage_records_workspace_ts;
DROP INDEX usage_records_tag_set_ts;

CREATE TABLE usage_records (LIKE usage_records_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (ts);
CREATE TABLE usage_records_default PARTITION OF usage_records DEFAULT;

DO $$
DECLARE m timestamp;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', to_timestamp(ts / 1000.0) AT TIME ZONE 'UTC') FROM usage_records_unpartitioned
    UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC')
    UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month'
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF usage_records FOR VALUES FROM (%s) TO (%s)',
      'usage_records_' || to_char(m, '"y"YYYY"m"MM'), ${epochMs('m')}, ${epochMs("(m + interval '1 month')")});
  END LOOP;
END $$;

INSERT INTO usage_records SELECT * FROM usage_records_unpartitioned;
DROP TABLE usage_records_unpartitioned;

ALTER TABLE usage_records ADD PRIMARY KEY (id, ts);
CREATE INDEX usage_records_ts ON usage_records (ts, id, tag_set_id);
CREATE INDEX usage_records_workspace_ts ON usage_records (workspace_id, ts, id);
CREATE INDEX usage_records_tag_set_ts ON usage_records (tag_set_id, ts);
ANALYZE usage_records;
`;

const sqlite = marks('INTEGER', ' STRICT');

export const recordsRetention: Migration = { version: 7, name: 'records_retention', postgres, sqlite };
