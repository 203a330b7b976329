/**
 * Daily rollups for long ranges (dashboards asking 7 or 30 days): one row per UTC day, and one row per
 * (tag key, tag value, day), with no built-in dimension. A 30-day grouping by a tag with thousands of values
 * (customer_id) then reads one row per value and day instead of one per value, hour and built-in combination.
 * They answer queries with no built-in grouping or filter (storage/query/plan.ts, path "daily").
 *
 * Money is kept as two columns, cost_pico = cost_pico_hi * 2^32 + cost_pico_lo: a day of the whole gateway
 * may exceed 2^63 pico-USD, which one BIGINT column could not hold; each half stays far from the limit.
 * Both tables are filled from the hourly rollups here, so that existing data is covered.
 */
import type { Migration } from './index';

const counters = (int: string) => `  requests              ${int} NOT NULL,
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

const DAY = 86_400_000;
const day = `hour - (((hour % ${DAY}) + ${DAY}) % ${DAY})`;
const sums = `SUM(requests), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens),
  SUM(cache_write_1h_tokens), SUM(reasoning_tokens), SUM(citation_tokens), SUM(search_queries),
  SUM(cost_pico >> 32), SUM(cost_pico & 4294967295),
  SUM(unknown_cost_count), SUM(estimated_count), SUM(partial_count), SUM(error_count)`;
const columns = `requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
  reasoning_tokens, citation_tokens, search_queries, cost_pico_hi, cost_pico_lo, unknown_cost_count, estimated_count,
  partial_count, error_count`;

function ddl(int: string, strict: string): string {
  return `
CREATE TABLE usage_rollup_daily (
  day                   ${int} NOT NULL PRIMARY KEY,  -- epoch ms of the UTC day start
${counters(int)}
)${strict};

CREATE TABLE usage_tag_rollup_daily (
  tag_key               TEXT NOT NULL,
  tag_value             TEXT NOT NULL,
  day                   ${int} NOT NULL,
${counters(int)},
  PRIMARY KEY (tag_key, day, tag_value)
)${strict};

INSERT INTO usage_rollup_daily (day, ${columns})
SELECT ${day}, ${sums}
FROM usage_rollup_hourly GROUP BY ${day};

INSERT INTO usage_tag_rollup_daily (tag_key, tag_value, day, ${columns})
SELECT tag_key, tag_value, ${day}, ${sums}
FROM usage_tag_rollup_hourly GROUP BY tag_key, tag_value, ${day};
`;
}

export const dailyRollups: Migration = {
  version: 2,
  name: 'daily_rollups',
  postgres: ddl('BIGINT', ''),
  sqlite: ddl('INTEGER', ' STRICT, WITHOUT ROWID'),
};
