/**
 * Initial schema. The two dialects are kept line for line parallel; differences:
 * BIGINT/BOOLEAN/JSONB in PostgreSQL vs INTEGER/INTEGER(0|1)/TEXT(JSON) in SQLite STRICT tables.
 * Times are epoch ms; money is integer pico-USD. Never edit a released migration: add a new one.
 */
import type { Migration } from './index';

const postgres = `
CREATE TABLE usage_records (
  id                    TEXT PRIMARY KEY,            -- x-gateway-request-id: inserts are idempotent on it
  ts                    BIGINT NOT NULL,
  workspace_id          TEXT,
  key_id                TEXT,
  provider              TEXT,
  model                 TEXT,
  served_model          TEXT,
  endpoint              TEXT,
  status                INTEGER NOT NULL,
  streamed              BOOLEAN NOT NULL,
  input_tokens          BIGINT,
  output_tokens         BIGINT,
  cache_read_tokens     BIGINT,
  cache_write_tokens    BIGINT,
  cache_write_1h_tokens BIGINT,
  reasoning_tokens      BIGINT,
  citation_tokens       BIGINT,
  search_queries        BIGINT,
  cost_pico             BIGINT,                      -- NULL = unknown (unpriced), never 0
  provenance            TEXT NOT NULL,
  price_version         TEXT,
  latency_ms            INTEGER NOT NULL,
  ttfb_ms               INTEGER,
  tags                  JSONB NOT NULL DEFAULT '{}',
  error_code            TEXT
);
CREATE INDEX usage_records_ts ON usage_records (ts, id);
CREATE INDEX usage_records_workspace_ts ON usage_records (workspace_id, ts, id);

-- One row per (record, tag key): raw-path grouping and filtering on tags.
CREATE TABLE record_tags (
  record_id TEXT NOT NULL REFERENCES usage_records (id) ON DELETE CASCADE,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  ts        BIGINT NOT NULL,                         -- copy of the record's ts for range scans by tag
  PRIMARY KEY (record_id, key)
);
CREATE INDEX record_tags_key_value_ts ON record_tags (key, value, ts);

-- Hourly totals per built-in dimension combination ('' = absent, so the key matches on conflict).
CREATE TABLE usage_rollup_hourly (
  hour                  BIGINT NOT NULL,             -- epoch ms of the UTC hour start
  workspace_id          TEXT NOT NULL,
  provider              TEXT NOT NULL,
  model                 TEXT NOT NULL,
  served_model          TEXT NOT NULL,
  endpoint              TEXT NOT NULL,
  key_id                TEXT NOT NULL,
  status                INTEGER NOT NULL,
  requests              BIGINT NOT NULL,
  input_tokens          BIGINT NOT NULL,
  output_tokens         BIGINT NOT NULL,
  cache_read_tokens     BIGINT NOT NULL,
  cache_write_tokens    BIGINT NOT NULL,
  cache_write_1h_tokens BIGINT NOT NULL,
  reasoning_tokens      BIGINT NOT NULL,
  citation_tokens       BIGINT NOT NULL,
  search_queries        BIGINT NOT NULL,
  cost_pico             BIGINT NOT NULL,             -- sum of known costs
  unknown_cost_count    BIGINT NOT NULL,
  estimated_count       BIGINT NOT NULL,
  partial_count         BIGINT NOT NULL,
  error_count           BIGINT NOT NULL,
  PRIMARY KEY (hour, workspace_id, provider, model, served_model, endpoint, key_id, status)
);
CREATE INDEX usage_rollup_hourly_workspace ON usage_rollup_hourly (workspace_id, hour);

-- Same, split by one tag (key, value) per row: a record with n tags adds to n rows.
CREATE TABLE usage_tag_rollup_hourly (
  tag_key               TEXT NOT NULL,
  tag_value             TEXT NOT NULL,
  hour                  BIGINT NOT NULL,
  workspace_id          TEXT NOT NULL,
  provider              TEXT NOT NULL,
  model                 TEXT NOT NULL,
  served_model          TEXT NOT NULL,
  endpoint              TEXT NOT NULL,
  key_id                TEXT NOT NULL,
  status                INTEGER NOT NULL,
  requests              BIGINT NOT NULL,
  input_tokens          BIGINT NOT NULL,
  output_tokens         BIGINT NOT NULL,
  cache_read_tokens     BIGINT NOT NULL,
  cache_write_tokens    BIGINT NOT NULL,
  cache_write_1h_tokens BIGINT NOT NULL,
  reasoning_tokens      BIGINT NOT NULL,
  citation_tokens       BIGINT NOT NULL,
  search_queries        BIGINT NOT NULL,
  cost_pico             BIGINT NOT NULL,
  unknown_cost_count    BIGINT NOT NULL,
  estimated_count       BIGINT NOT NULL,
  partial_count         BIGINT NOT NULL,
  error_count           BIGINT NOT NULL,
  PRIMARY KEY (tag_key, hour, workspace_id, tag_value, provider, model, served_model, endpoint, key_id, status)
);
CREATE INDEX usage_tag_rollup_hourly_workspace ON usage_tag_rollup_hourly (workspace_id, tag_key, hour);

-- Gateway keys for the auth plugin: only the sha256 of a key is stored.
CREATE TABLE keys (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  label        TEXT NOT NULL DEFAULT '',
  hash         TEXT NOT NULL UNIQUE,                 -- sha256 hex
  created_at   BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at   BIGINT
);
CREATE INDEX keys_workspace ON keys (workspace_id);
`;

const sqlite = `
CREATE TABLE usage_records (
  id                    TEXT PRIMARY KEY,
  ts                    INTEGER NOT NULL,
  workspace_id          TEXT,
  key_id                TEXT,
  provider              TEXT,
  model                 TEXT,
  served_model          TEXT,
  endpoint              TEXT,
  status                INTEGER NOT NULL,
  streamed              INTEGER NOT NULL,            -- 0 | 1
  input_tokens          INTEGER,
  output_tokens         INTEGER,
  cache_read_tokens     INTEGER,
  cache_write_tokens    INTEGER,
  cache_write_1h_tokens INTEGER,
  reasoning_tokens      INTEGER,
  citation_tokens       INTEGER,
  search_queries        INTEGER,
  cost_pico             INTEGER,                     -- NULL = unknown (unpriced), never 0
  provenance            TEXT NOT NULL,
  price_version         TEXT,
  latency_ms            INTEGER NOT NULL,
  ttfb_ms               INTEGER,
  tags                  TEXT NOT NULL DEFAULT '{}',  -- JSON object
  error_code            TEXT
) STRICT;
CREATE INDEX usage_records_ts ON usage_records (ts, id);
CREATE INDEX usage_records_workspace_ts ON usage_records (workspace_id, ts, id);

CREATE TABLE record_tags (
  record_id TEXT NOT NULL REFERENCES usage_records (id) ON DELETE CASCADE,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  ts        INTEGER NOT NULL,
  PRIMARY KEY (record_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX record_tags_key_value_ts ON record_tags (key, value, ts);

CREATE TABLE usage_rollup_hourly (
  hour                  INTEGER NOT NULL,
  workspace_id          TEXT NOT NULL,
  provider              TEXT NOT NULL,
  model                 TEXT NOT NULL,
  served_model          TEXT NOT NULL,
  endpoint              TEXT NOT NULL,
  key_id                TEXT NOT NULL,
  status                INTEGER NOT NULL,
  requests              INTEGER NOT NULL,
  input_tokens          INTEGER NOT NULL,
  output_tokens         INTEGER NOT NULL,
  cache_read_tokens     INTEGER NOT NULL,
  cache_write_tokens    INTEGER NOT NULL,
  cache_write_1h_tokens INTEGER NOT NULL,
  reasoning_tokens      INTEGER NOT NULL,
  citation_tokens       INTEGER NOT NULL,
  search_queries        INTEGER NOT NULL,
  cost_pico             INTEGER NOT NULL,            -- < 2^63 per row (one hour of one group)
  unknown_cost_count    INTEGER NOT NULL,
  estimated_count       INTEGER NOT NULL,
  partial_count         INTEGER NOT NULL,
  error_count           INTEGER NOT NULL,
  PRIMARY KEY (hour, workspace_id, provider, model, served_model, endpoint, key_id, status)
) STRICT, WITHOUT ROWID;
CREATE INDEX usage_rollup_hourly_workspace ON usage_rollup_hourly (workspace_id, hour);

CREATE TABLE usage_tag_rollup_hourly (
  tag_key               TEXT NOT NULL,
  tag_value             TEXT NOT NULL,
  hour                  INTEGER NOT NULL,
  workspace_id          TEXT NOT NULL,
  provider              TEXT NOT NULL,
  model                 TEXT NOT NULL,
  served_model          TEXT NOT NULL,
  endpoint              TEXT NOT NULL,
  key_id                TEXT NOT NULL,
  status                INTEGER NOT NULL,
  requests              INTEGER NOT NULL,
  input_tokens          INTEGER NOT NULL,
  output_tokens         INTEGER NOT NULL,
  cache_read_tokens     INTEGER NOT NULL,
  cache_write_tokens    INTEGER NOT NULL,
  cache_write_1h_tokens INTEGER NOT NULL,
  reasoning_tokens      INTEGER NOT NULL,
  citation_tokens       INTEGER NOT NULL,
  search_queries        INTEGER NOT NULL,
  cost_pico             INTEGER NOT NULL,
  unknown_cost_count    INTEGER NOT NULL,
  estimated_count       INTEGER NOT NULL,
  partial_count         INTEGER NOT NULL,
  error_count           INTEGER NOT NULL,
  PRIMARY KEY (tag_key, hour, workspace_id, tag_value, provider, model, served_model, endpoint, key_id, status)
) STRICT, WITHOUT ROWID;
CREATE INDEX usage_tag_rollup_hourly_workspace ON usage_tag_rollup_hourly (workspace_id, tag_key, hour);

CREATE TABLE keys (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  label        TEXT NOT NULL DEFAULT '',
  hash         TEXT NOT NULL UNIQUE,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at   INTEGER
) STRICT;
CREATE INDEX keys_workspace ON keys (workspace_id);
`;

export const initial: Migration = { version: 1, name: 'initial', postgres, sqlite };
