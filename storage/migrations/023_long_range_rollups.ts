/**
 * Rollups that bound the long-range reads (docs/scaling.md):
 *   usage_dims_rollup_daily   usage_rollup_hourly's built-in dimensions per UTC day: a year grouped or filtered by a
 *                             built-in (by model, a daily series by model) reads one row per day and combination,
 *                             where the hourly table held up to 24
 *   usage_tag_rollup_monthly  usage_tag_rollup_daily per UTC month: a year grouped by a tag (top customers, the CSV
 *                             of every customer) reads one row per value and month, and days only at the edges
 *   usage_tag_rollup_daily (tag_key, tag_value, day)
 *                             one value's days (a daily series of one customer): the key (tag_key, day, tag_value)
 *                             makes such a read go through every value of the range
 *
 * Each table is backfilled from the rollup it refines (money split as in the other daily tables: hi * 2^32 + lo), so
 * each row is exactly the sum of the rows it replaces, records deleted by retention included; both are a small
 * fraction of their sources and are built in the migration's transaction (docs/scaling.md gives the time at 10M
 * records). The index on the daily tag rollup is built concurrently on PostgreSQL, as that table is written on every
 * batch. An instance of an older build
 * writing during or after the backfill adds to the older rollups only: upgrade every instance together, as for any
 * migration that adds a rollup.
 */
import type { Migration } from './index';

const counterColumns = `requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
  reasoning_tokens, citation_tokens, search_queries, cost_pico_hi, cost_pico_lo, unknown_cost_count, estimated_count,
  partial_count, error_count, cost_disagreement_count, not_counted_count, discount_pico_hi, discount_pico_lo,
  list_cost_count`;

/**
 * The daily tables' counter columns (migrations 002, 008, 009 and 022), repeated: a released migration imports
 * nothing.
 */
const counterDdl = (int: string) =>
  counterColumns
    .split(',')
    .map((c) => `  ${c.trim()} ${int} NOT NULL`)
    .join(',\n');

/** The hourly rollup's counters summed into the daily layout: each money column split before summing. */
const hourlySums = counterColumns.replace(/\b(\w+?)(_hi|_lo)?\b/g, (_, c: string, half?: string) =>
  half === '_hi' ? `SUM(${c} >> 32)` : half === '_lo' ? `SUM(${c} & 4294967295)` : `SUM(${c})`,
);
const DIMS = 'workspace_id, provider, model, served_model, endpoint, key_id, status';
const DAY = 86_400_000;
const INDEX = 'usage_tag_rollup_daily_value';
const INDEX_COLUMNS = 'usage_tag_rollup_daily (tag_key, tag_value, day)';

/** `month` is the SQL of the UTC month start (epoch ms) of the daily row's `day`. */
const ddl = (int: string, options: string, month: string) => `
CREATE TABLE usage_dims_rollup_daily (
  day          ${int} NOT NULL,  -- epoch ms of the UTC day start
  workspace_id TEXT NOT NULL,
  provider     TEXT NOT NULL,
  model        TEXT NOT NULL,
  served_model TEXT NOT NULL,
  endpoint     TEXT NOT NULL,
  key_id       TEXT NOT NULL,
  status       INTEGER NOT NULL,
${counterDdl(int)},
  PRIMARY KEY (day, ${DIMS})
)${options};
INSERT INTO usage_dims_rollup_daily (day, ${DIMS}, ${counterColumns})
SELECT hour - (((hour % ${DAY}) + ${DAY}) % ${DAY}), ${DIMS}, ${hourlySums}
FROM usage_rollup_hourly GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
CREATE TABLE usage_tag_rollup_monthly (
  tag_key   TEXT NOT NULL,
  tag_value TEXT NOT NULL,
  month     ${int} NOT NULL,  -- epoch ms of the UTC month start
${counterDdl(int)},
  PRIMARY KEY (tag_key, month, tag_value)
)${options};
INSERT INTO usage_tag_rollup_monthly (tag_key, tag_value, month, ${counterColumns})
SELECT tag_key, tag_value, ${month}, ${counterColumns.replace(/(\w+)/g, 'SUM($1)')}
FROM usage_tag_rollup_daily GROUP BY 1, 2, 3;
`;

export const longRangeRollups: Migration = {
  version: 23,
  name: 'long_range_rollups',
  postgres: `${ddl(
    'BIGINT',
    '',
    `(extract(epoch FROM date_trunc('month', to_timestamp(day / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`,
  )}
ANALYZE usage_dims_rollup_daily;
ANALYZE usage_tag_rollup_monthly;`,
  postgresOutsideTransaction: [
    `DROP INDEX CONCURRENTLY IF EXISTS ${INDEX}`,
    `CREATE INDEX CONCURRENTLY ${INDEX} ON ${INDEX_COLUMNS}`,
  ],
  sqlite: `${ddl(
    'INTEGER',
    ' STRICT, WITHOUT ROWID',
    `CAST(strftime('%s', day / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000`,
  )}
CREATE INDEX ${INDEX} ON ${INDEX_COLUMNS};`,
};
