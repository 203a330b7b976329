/**
 * usage_tag_set_monthly: the counters of usage_tag_set_daily per (set_id, UTC month). A grouping on two tag keys
 * over a year read one daily row per set and day (about one per two records); whole months read one row per set
 * and month instead, and only the partial months at the range's edges read daily rows (storage/query/sql.ts).
 *
 * The write path adds each record to its month's row as it adds it to its day's (storage/rollup.ts). The backfill
 * sums the daily rows per month, so a month's row is exactly the sum of its days, and is built in the migration's
 * transaction. An instance of an older build writing during or after the backfill adds to the daily rows only:
 * upgrade every instance together, as for any migration that adds a rollup.
 * Keyed by (set_id, month) for the reads of a few sets; (month, set_id) serves a grouping that reads every set of
 * a range of months. The table holds one row per set and month, a small fraction of the daily one: it is built
 * in the migration's transaction rather than concurrently.
 */
import type { Migration } from './index';

const counterColumns = `requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
  reasoning_tokens, citation_tokens, search_queries, cost_pico_hi, cost_pico_lo, unknown_cost_count, estimated_count,
  partial_count, error_count, cost_disagreement_count, not_counted_count`;

/** The daily table's counter columns (migrations 002, 008 and 009), repeated: a released migration imports nothing. */
const counterDdl = (int: string) =>
  counterColumns
    .split(',')
    .map((c) => `  ${c.trim()} ${int} NOT NULL`)
    .join(',\n');

/** `month` is the SQL of the UTC month start (epoch ms) of the daily row's `day`. */
const ddl = (int: string, options: string, month: string) => `
CREATE TABLE usage_tag_set_monthly (
  set_id ${int} NOT NULL,
  month  ${int} NOT NULL,  -- epoch ms of the UTC month start
${counterDdl(int)},
  PRIMARY KEY (set_id, month)
)${options};
INSERT INTO usage_tag_set_monthly (set_id, month, ${counterColumns})
SELECT set_id, ${month}, ${counterColumns.replace(/(\w+)/g, 'SUM($1)')}
FROM usage_tag_set_daily GROUP BY 1, 2;
CREATE INDEX usage_tag_set_monthly_month ON usage_tag_set_monthly (month, set_id);
`;

export const tagSetMonthly: Migration = {
  version: 21,
  name: 'tag_set_monthly',
  postgres: `${ddl(
    'BIGINT',
    '',
    `(extract(epoch FROM date_trunc('month', to_timestamp(day / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`,
  )}
ANALYZE usage_tag_set_monthly;`,
  sqlite: ddl(
    'INTEGER',
    ' STRICT, WITHOUT ROWID',
    `CAST(strftime('%s', day / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000`,
  ),
};
