/**
 * Which tag keys appear in the data (the dashboard's group-by picker), read from the tag rollup.
 *
 * usage_tag_rollup_hourly's primary key starts with tag_key, so the distinct keys are found with a
 * loose index scan: a recursive query that seeks to the next key above the previous one. The cost is
 * one index seek per distinct key, whatever the number of rollup rows (SELECT DISTINCT would read them all).
 * The same SQL runs on SQLite and PostgreSQL.
 */
import type { SqlDialect } from '../dialect';
import { TAG_ROLLUP_TABLE } from '../rollup';
import type { Exec } from './run';
import type { SqlQuery } from './sql';

export function tagKeysSql(d: SqlDialect): SqlQuery {
  const next = (after: string) => `(SELECT t.tag_key FROM ${TAG_ROLLUP_TABLE} t${after} ORDER BY t.tag_key LIMIT 1)`;
  const sql = [
    'WITH RECURSIVE k (tag_key) AS (',
    `  SELECT ${next('')}`,
    '  UNION ALL',
    `  SELECT ${next(' WHERE t.tag_key > k.tag_key')} FROM k WHERE k.tag_key IS NOT NULL`,
    ')',
    'SELECT tag_key FROM k WHERE tag_key IS NOT NULL',
  ].join('\n');
  return { sql: d.sql(sql), params: [] };
}

/** Every tag key with at least one rollup row, sorted. */
export async function listTagKeys(d: SqlDialect, exec: Exec): Promise<string[]> {
  const rows = await exec(tagKeysSql(d));
  return rows.map((r) => String(r.tag_key)).sort();
}
