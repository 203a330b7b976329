/**
 * How a raw query filtered by a tag value finds its records (RawVia in storage/query/sql.ts): from the tag sets
 * carrying the value, one index seek per set on usage_records (tag_set_id, ts), or by time on usage_records
 * (ts, id, tag_set_id), testing each record's set from the index (against a hash of the matching sets, or for a
 * small range by looking the set up). Neither database can tell which is cheaper (a value's sets are correlated
 * with the other filters, and SQLite keeps no statistics on ranges), so it is decided here from the rollups, with a
 * few index seeks:
 *   records  the records of the range (usage_rollup_daily)
 *   matches  an upper bound of the matching records: the least of the value filters' own counts
 *            (usage_tag_rollup_daily, one seek per day)
 *   sets     the matching sets (tag_set_members (key, value, set_id)), counted only as far as matters
 * Day totals are scaled to the part of the range that has days with records, at those days' rate.
 *
 * With two value filters or more, the least of their own counts bounds the matches loosely (env = staging is 8% of
 * the records and one agent a fifth, but both together 0.8%): it alone sent such an aggregate over a year by time,
 * a scan of every record of the year. When the matching sets are few enough for their seeks to pay, the matches are
 * then bounded tightly by the sets' own rows in usage_tag_set_monthly (one seek per set, one row per set and month
 * of the range).
 *
 * Aggregates on PostgreSQL always go by sets, as a join its planner orders (aggregateVia says why).
 *
 * Costs on SQLite at a million records (bench/dashboard.ts), in units of one record scanned by time: a record read
 * by sets costs ~16 more than one read by time (scattered against sequential reads of the table), a set's seek ~8.
 * So an aggregate goes by sets only for values that are rare in the range.
 */
import { toNumber, type SqlValue } from '../codec';
import type { SqlDialect } from '../dialect';
import { DAILY_TABLE, DAY_MS, TAG_DAILY_TABLE, TAG_SET_MONTHLY_TABLE, floorDay, floorMonth } from '../rollup';
import type { ParsedFilters, TagFilter } from './plan';
import type { Exec } from './run';
import type { RawVia } from './sql';
import { matchingSetCountSql, matchingSets, splitTagFilters } from './tag-set-match';

/** Extra cost of a record read by sets, and of a set's seek, in records scanned by time. */
const SCATTERED_READ = 16;
const SET_SEEK = 8;

/**
 * A listing by time stops once its page is full: it scans about page / share records. By sets it reads the
 * matching records of each time window (storage/query/list.ts). Values with at least this share of the range's
 * records are listed by time (a page of 101 then scans at most ~100,000 records).
 */
const LIST_BY_TIME_SHARE = 0.001;

interface RangeCounts {
  records: number;
  matches: number;
}

/** Estimated records of [from, to) and records matching every value filter (`values` non-empty). */
async function rangeCounts(
  d: SqlDialect,
  exec: Exec,
  values: TagFilter[],
  from: number,
  to: number,
): Promise<RangeCounts> {
  const base = `SELECT MIN(day) AS lo, MAX(day) AS hi, SUM(requests) AS n, COUNT(*) AS days FROM ${DAILY_TABLE} WHERE day >= ? AND day < ?`;
  const [b] = await exec({ sql: d.sql(base), params: [floorDay(from), to] });
  const days = toNumber(b?.days);
  if (days === 0) return { records: 0, matches: 0 };
  const [lo, hi] = [toNumber(b.lo), toNumber(b.hi)];
  // A range reaching far beyond the data ("all time") would otherwise be scaled as if every day had records.
  const scale = (Math.min(to, hi + DAY_MS) - Math.max(from, lo)) / (days * DAY_MS);
  // The days that have records, generated: each is one seek on the (tag_key, day, tag_value) key.
  const perValue = values.map(
    (_, i) =>
      `(SELECT SUM(t.requests) FROM days CROSS JOIN ${TAG_DAILY_TABLE} t WHERE t.tag_key = ? AND t.day = days.day AND t.tag_value = ?) AS m${i}`,
  );
  const sql = `WITH RECURSIVE days (day) AS (SELECT CAST(? AS BIGINT) UNION ALL SELECT day + ${DAY_MS} FROM days WHERE day < ?)
SELECT ${perValue.join(', ')}`;
  const [m] = await exec({ sql: d.sql(sql), params: [lo, hi, ...values.flatMap((t) => [t.key, t.value])] });
  const matches = Math.min(...values.map((_, i) => toNumber(m?.[`m${i}`])));
  return { records: toNumber(b.n) * scale, matches: matches * scale };
}

/**
 * Ranges expected to hold fewer records than this are probed record by record rather than scanned against a hash
 * of the matching sets, whose build costs per set: the partial hours at the edges of a one-tag chart hold a few
 * hundred records, and a common value has thousands of sets.
 */
const PROBE_MAX_RECORDS = 2000;

/**
 * An aggregate reads every matching record: by sets when the seeks and scattered reads cost less than the scan;
 * otherwise by time, probing each record's set when the range is small.
 */
export async function aggregateVia(
  d: SqlDialect,
  exec: Exec,
  filters: ParsedFilters,
  from: number,
  to: number,
): Promise<RawVia> {
  const { values } = splitTagFilters(filters.tags);
  if (values.length === 0) return 'time';
  // PostgreSQL plans the sets' join itself (a hash join over the range, or a seek per set) from its statistics, and
  // forcing a scan by time or a probe only slows it down. Only SQLite, which keeps a join's written order, needs the
  // choice made for it.
  if (d.reordersJoins) return 'sets';
  const { records, matches } = await rangeCounts(d, exec, values, from, to);
  const byTime: RawVia = records < PROBE_MAX_RECORDS ? 'probe' : 'time';
  // The most sets whose seeks pay, given `m` matching records read scattered.
  const affordable = (m: number) => Math.floor((records - SCATTERED_READ * m) / SET_SEEK);
  const tighten = values.length > 1;
  if (records - SCATTERED_READ * (tighten ? 0 : matches) <= 0) return byTime;
  const bound = affordable(tighten ? 0 : matches);
  const [row] = await exec(matchingSetCountSql(d, filters.tags, bound + 1));
  const sets = toNumber(row?.n);
  if (sets > bound) return byTime;
  if (!tighten || sets <= affordable(matches)) return 'sets';
  return sets <= affordable(await setMonthsMatches(d, exec, filters, from, to)) ? 'sets' : byTime;
}

/** The records of the months overlapping [from, to) in the sets matching the tag filters (usage_tag_set_monthly). */
async function setMonthsMatches(
  d: SqlDialect,
  exec: Exec,
  filters: ParsedFilters,
  from: number,
  to: number,
): Promise<number> {
  const { values, untagged } = splitTagFilters(filters.tags);
  const sets = matchingSets(d, values, untagged);
  const sql = `SELECT SUM(requests) AS n FROM ${TAG_SET_MONTHLY_TABLE} WHERE set_id IN (${sets.sql}) AND month >= ? AND month < ?`;
  const [row] = await exec({
    sql: d.sql(sql),
    params: [...sets.params, floorMonth(from), to].map(d.bind) as SqlValue[],
  });
  return toNumber(row?.n);
}

/** A listing: by time for values common in the range, by sets in time windows for rare ones. */
export async function listVia(
  d: SqlDialect,
  exec: Exec,
  filters: ParsedFilters,
  from: number,
  to: number,
): Promise<RawVia> {
  const { values } = splitTagFilters(filters.tags);
  if (values.length === 0) return 'time';
  const { records, matches } = await rangeCounts(d, exec, values, from, to);
  return matches >= LIST_BY_TIME_SHARE * records ? 'time' : 'sets';
}
