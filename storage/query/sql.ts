/**
 * SQL text for the usage queries, shared by both dialects. Builders use `?` placeholders
 * (dialect.sql rewrites them for pg) and only inline constants chosen here, never input.
 * Aggregate queries alias the bucket as `bucket`, the i-th groupBy value as `g<i>` and the
 * counters by their rollup column names (see decodeAggregate).
 */
import { RECORD_COLUMNS, type SqlValue } from '../codec';
import { COUNTERS } from '../counters';
import type { SqlDialect } from '../dialect';
import {
  DAILY_TABLE,
  DAY_MS,
  DIMS_DAILY_TABLE,
  HOUR_MS,
  ROLLUP_TABLE,
  TAG_DAILY_TABLE,
  TAG_MONTHLY_TABLE,
  TAG_ROLLUP_TABLE,
  TAG_SET_DAILY_TABLE,
} from '../rollup';
import type { Interval } from '../store';
import { RECORD_TAG_SET_COLUMN, TAG_SET_MEMBERS_TABLE } from '../tag-sets';
import type { BuiltinDim, BuiltinFilter, Dim, ParsedFilters, TagDim, TagFilter } from './plan';
import { monthPartsUnion } from './month-parts';
import { lacksKey, matchingSets, splitTagFilters } from './tag-set-match';
import { setTotals, tagSetGroupsSql } from './tag-set-totals';

export interface SqlQuery {
  sql: string;
  params: SqlValue[];
}

/** Collects WHERE conditions and their parameters in text order. */
class Where {
  readonly parts: string[] = [];
  readonly params: SqlValue[] = [];
  add(cond: string, ...params: SqlValue[]): void {
    this.parts.push(cond);
    this.params.push(...params);
  }
  toString(): string {
    return this.parts.length ? `WHERE ${this.parts.join('\n  AND ')}` : '';
  }
}

function bucketExpr(col: string, interval: Interval | undefined): string | undefined {
  if (!interval) return undefined;
  if (interval === 'hour' && col === 'hour') return 'hour';
  if (interval === 'day' && col === 'day') return 'day';
  const size = interval === 'hour' ? HOUR_MS : DAY_MS;
  return `${col} - (${col} % ${size})`;
}

function aggregateSelect(d: SqlDialect, counterExpr: (c: (typeof COUNTERS)[number]) => string): string[] {
  return COUNTERS.map((c) =>
    c.money ? d.sumMoney(counterExpr(c), c.column) : `SUM(${counterExpr(c)}) AS ${c.column}`,
  );
}

function groupClause(aliases: string[]): string {
  return aliases.length ? `GROUP BY ${aliases.join(', ')}` : '';
}

/** Built-in filters on a rollup table, where absent values are stored as ''. */
function rollupBuiltinFilter(w: Where, f: BuiltinFilter): void {
  if (f.dim.column === 'status') {
    if (f.value === null) w.add('1 = 0');
    else w.add('status = ?', f.value);
  } else {
    w.add(`${f.dim.column} = ?`, f.value ?? '');
  }
}

/** Built-in filters on usage_records `r`, where absent values are NULL (or ''). */
function rawBuiltinFilter(w: Where, f: BuiltinFilter): void {
  const col = `r.${f.dim.column}`;
  if (f.value !== null) w.add(`${col} = ?`, f.value);
  else if (f.dim.column === 'status') w.add('1 = 0');
  else w.add(`(${col} IS NULL OR ${col} = '')`);
}

export interface RollupSpec {
  /** Whole hours: [from, to). */
  from: number;
  to: number;
  /** Built-in dims grouped, with their position in the query's groupBy. */
  groupBy: { dim: BuiltinDim; index: number }[];
  builtinFilters: BuiltinFilter[];
  interval?: Interval;
  /** Reads a tag rollup for this key (storage/query/sql.ts rollupTable) instead of a rollup of the whole gateway. */
  tag?: { key: string; value?: string; groupIndex?: number };
  /** Reads the daily tables (whole days, no hourly interval; with a tag, no built-in grouping or filter). */
  daily?: boolean;
}

export function rollupAggregateSql(d: SqlDialect, spec: RollupSpec): SqlQuery {
  const select: string[] = [];
  const aliases: string[] = [];
  const time = spec.daily ? 'day' : 'hour';
  const bucket = bucketExpr(time, spec.interval);
  if (bucket) {
    select.push(`${bucket} AS bucket`);
    aliases.push('bucket');
  }
  for (const { dim, index } of spec.groupBy) {
    select.push(`${dim.column} AS g${index}`);
    aliases.push(`g${index}`);
  }
  if (spec.tag?.groupIndex !== undefined) {
    select.push(`tag_value AS g${spec.tag.groupIndex}`);
    // The tag value first in GROUP BY: SQLite sorts the rows by these columns, and a tag value (a customer id) tells
    // rows apart far more often than a built-in such as model, so most comparisons end at the first column
    // (customer_id x model over a month of a million records: 15% less CPU).
    aliases.unshift(`g${spec.tag.groupIndex}`);
  }
  select.push(
    ...(spec.daily
      ? COUNTERS.map((c) =>
          c.money ? d.sumSplitMoney(`${c.column}_hi`, `${c.column}_lo`, c.column) : `SUM(${c.column}) AS ${c.column}`,
        )
      : aggregateSelect(d, (c) => c.column)),
  );

  const source = rollupSource(spec);
  const sql = [`SELECT ${select.join(',\n  ')}`, `FROM ${source.from}`, String(source.where), groupClause(aliases)]
    .filter(Boolean)
    .join('\n');
  return { sql: d.sql(sql), params: [...source.params, ...source.where.params].map(d.bind) as SqlValue[] };
}

/** The smallest rollup table holding the spec's dimensions at its time grain. */
function rollupTable(spec: RollupSpec): string {
  const builtins = spec.groupBy.length > 0 || spec.builtinFilters.length > 0;
  if (spec.daily) return spec.tag ? TAG_DAILY_TABLE : builtins ? DIMS_DAILY_TABLE : DAILY_TABLE;
  return spec.tag ? TAG_ROLLUP_TABLE : ROLLUP_TABLE;
}

/** The rollup table a rollup aggregate reads (or a union of some), and the conditions picking its rows. */
function rollupSource(spec: RollupSpec): { from: string; params: SqlValue[]; where: Where } {
  const w = new Where();
  let source: SqlQuery;
  if (spec.daily && spec.tag && spec.tag.value === undefined && !spec.interval) {
    // A tag's values over whole days, no series: whole months from the monthly rollup (storage/query/month-parts.ts).
    const tables = { monthly: TAG_MONTHLY_TABLE, daily: TAG_DAILY_TABLE };
    const key = { sql: 'tag_key = ?', params: [spec.tag.key] };
    const union = monthPartsUnion(tables, 'tag_value', key, spec.from, spec.to);
    source = { sql: `(${union.sql}) t`, params: union.params };
  } else {
    const time = spec.daily ? 'day' : 'hour';
    if (spec.tag) w.add('tag_key = ?', spec.tag.key);
    w.add(`${time} >= ?`, spec.from);
    w.add(`${time} < ?`, spec.to);
    if (spec.tag?.value !== undefined) w.add('tag_value = ?', spec.tag.value);
    source = { sql: rollupTable(spec), params: [] };
  }
  for (const f of spec.builtinFilters) rollupBuiltinFilter(w, f);
  return { from: source.sql, params: source.params, where: w };
}

export interface TagSetSpec {
  /** Whole UTC days: [from, to). */
  from: number;
  to: number;
  /** The query's groupBy: tag dimensions only on this path. */
  groupBy: TagDim[];
  tags: TagFilter[];
  /** 'day' or none (the plan sends hourly series raw). */
  interval?: Interval;
}

/**
 * Whole days of the tag-set path: the sets `s` matching the tag filters, their member values for the grouped keys
 * (`g<i>`; a set without the key: NULL -> "(untagged)"), then their daily rows `r`, summed per group.
 * The candidate sets are those carrying every filter value (matchingSets); with no value filter, every set is a
 * candidate. Each candidate's member values are looked up once per set rather than once per day, and each set's
 * days are one seek on the (set_id, day) key.
 *
 * SQLite keeps the written join order (CROSS JOIN). PostgreSQL plans freely, and its estimate of how many sets
 * carry a (key, value) pair is poor (keys and values are correlated): with a value filter it hash-joined the whole
 * daily table and every member of the grouped key, where one index seek per candidate set reads a fraction of
 * that. So when a value filter bounds the candidates, PostgreSQL
 * gets the per-set form: member values as scalar subqueries and the daily rows as a LATERAL subquery, both behind
 * OFFSET 0 so that the planner cannot flatten them back into a hash join.
 *
 * Without a value filter every set is a candidate and no series is asked (a grouping over the range): PostgreSQL
 * sums the rollup rows straight into their groups (storage/query/tag-set-totals.ts says how and why). SQLite sums
 * them per set first (setTotals), then joins the sets' totals with their member values and sums them per group:
 * PostgreSQL's form read the same rows about a third slower there (a temporary index on the sets' map, then a sort
 * of every row by group). Joining each row with its members first would carry every row through the joins and sort them all by
 * value, over three seconds for a year of a million records on PostgreSQL.
 */
export function tagSetAggregateSql(d: SqlDialect, spec: TagSetSpec): SqlQuery {
  const { values, untagged } = splitTagFilters(spec.tags);
  if (values.length === 0 && !spec.interval && d.reordersJoins) return tagSetGroupsSql(d, spec, untagged);
  const perSet = values.length > 0 && d.reordersJoins;
  const select: string[] = [];
  const aliases: string[] = [];
  if (spec.interval) {
    select.push('r.day AS bucket');
    aliases.push('bucket');
  }
  spec.groupBy.forEach((_, i) => {
    select.push(perSet ? `s.g${i} AS g${i}` : `m${i}.value AS g${i}`);
    aliases.push(`g${i}`);
  });
  select.push(
    ...COUNTERS.map((c) =>
      c.money ? d.sumSplitMoney(`r.${c.column}_hi`, `r.${c.column}_lo`, c.column) : `SUM(r.${c.column}) AS ${c.column}`,
    ),
  );
  const groupKeys = spec.groupBy.map((dim) => dim.key);
  const sets = matchingSets(d, values, untagged);
  const r = values.length === 0 && !spec.interval ? setTotals(spec) : undefined;

  if (perSet) {
    const members = spec.groupBy.map(
      (_, i) => `(SELECT m.value FROM ${TAG_SET_MEMBERS_TABLE} m WHERE m.set_id = x.set_id AND m.key = ?) AS g${i}`,
    );
    const sql = [
      `SELECT ${select.join(',\n  ')}`,
      `FROM (SELECT ${['x.set_id', ...members].join(', ')} FROM (${sets.sql}) x OFFSET 0) s`,
      `CROSS JOIN LATERAL (SELECT * FROM ${TAG_SET_DAILY_TABLE} r WHERE r.set_id = s.set_id AND r.day >= ? AND r.day < ? OFFSET 0) r`,
      groupClause(aliases),
    ].join('\n');
    return { sql: d.sql(sql), params: [...groupKeys, ...sets.params, spec.from, spec.to].map(d.bind) as SqlValue[] };
  }

  const joins = (set: string) =>
    spec.groupBy.map((_, i) => `LEFT JOIN ${TAG_SET_MEMBERS_TABLE} m${i} ON m${i}.set_id = ${set} AND m${i}.key = ?`);
  if (r) {
    // Every set is a candidate but those lacking an "(untagged)" filter's key: tested on the totals' own set_id.
    const sql = [
      `SELECT ${select.join(',\n  ')}`,
      `FROM (${r.sql}) r`,
      ...joins('r.set_id'),
      untagged.length ? `WHERE ${untagged.map(() => lacksKey('r.set_id')).join(' AND ')}` : '',
      groupClause(aliases),
    ].join('\n');
    const params = [...r.params, ...groupKeys, ...untagged.map((t) => t.key)];
    return { sql: d.sql(sql), params: params.map(d.bind) as SqlValue[] };
  }
  const w = new Where();
  w.add('r.set_id = s.set_id');
  w.add('r.day >= ?', spec.from);
  w.add('r.day < ?', spec.to);
  const sql = [
    `SELECT ${select.join(',\n  ')}`,
    `FROM (${sets.sql}) s`,
    ...joins('s.set_id'),
    `CROSS JOIN ${TAG_SET_DAILY_TABLE} r`,
    String(w),
    groupClause(aliases),
  ].join('\n');
  return { sql: d.sql(sql), params: [...sets.params, ...groupKeys, ...w.params].map(d.bind) as SqlValue[] };
}

/**
 * How a raw query with a tag filter on a value finds its records:
 *   sets  from the matching tag sets, each set's records in the range by usage_records (tag_set_id, ts): only
 *         matching records are read (and, for a listing, sorted)
 *   time  by usage_records (ts, id, tag_set_id), testing each record's set against the matching ones (held in a
 *         hash, read from the index): a listing reads records newest first and stops at its page; an aggregate
 *         of a common value reads the table in order rather than scattered, set by set. The test is written
 *         `(... IN (...)) IS TRUE` so that neither database turns it into a join: SQLite would seek the sets
 *         instead, and PostgreSQL, estimating a few dozen matches, would hash-join and sort the whole month for
 *         one page
 *   probe by time as well, looking each record's set up in tag_set_members (set_id, key): no hash of the matching
 *         sets to build, for a range holding fewer records than the value has sets (the partial hours at the edges
 *         of a chart of a common value). Wrapped in IS TRUE for the same reason.
 * storage/query/via.ts chooses.
 */
export type RawVia = 'sets' | 'time' | 'probe';

/** "Set `alias` has the member key = value": one parameter pair. */
const hasMember = (alias: string) =>
  `EXISTS (SELECT 1 FROM ${TAG_SET_MEMBERS_TABLE} p WHERE p.set_id = ${alias} AND p.key = ? AND p.value = ?)`;

/**
 * The FROM clause (with its parameters) and the conditions selecting usage_records `r` by time range and
 * filters. Tags are matched through the record's tag set: a value filter by the sets carrying it, "(untagged)"
 * by the set lacking the key (tag_set_members (set_id, key)).
 */
function rawSource(
  d: SqlDialect,
  w: Where,
  from: number,
  to: number,
  filters: ParsedFilters,
  via: RawVia,
): { from: string; params: SqlValue[] } {
  const { values, untagged } = splitTagFilters(filters.tags);
  let source = { from: 'FROM usage_records r', params: [] as SqlValue[] };
  const set = `r.${RECORD_TAG_SET_COLUMN}`;
  if (values.length && via === 'probe') {
    for (const t of values) w.add(`(${hasMember(set)}) IS TRUE`, t.key, t.value);
    for (const t of untagged) w.add(`(${lacksKey(set)}) IS TRUE`, t.key);
  } else if (values.length) {
    const sets = matchingSets(d, values, untagged);
    if (via === 'sets') {
      // CROSS JOIN: SQLite keeps the sets outside; PostgreSQL plans the join as its estimates say.
      source = { from: `FROM (${sets.sql}) s\nCROSS JOIN usage_records r`, params: sets.params };
      w.add(`${set} = s.set_id`);
    } else {
      w.add(`(${set} IN (${sets.sql})) IS TRUE`, ...sets.params);
    }
  } else {
    for (const t of untagged) w.add(lacksKey(set), t.key);
  }
  w.add('r.ts >= ?', from);
  w.add('r.ts < ?', to);
  for (const f of filters.builtins) rawBuiltinFilter(w, f);
  return source;
}

export interface RawSpec {
  from: number;
  to: number;
  groupBy: Dim[];
  filters: ParsedFilters;
  interval?: Interval;
  /** How a tag filter on a value finds the records (RawVia). */
  via: RawVia;
}

export function rawAggregateSql(d: SqlDialect, spec: RawSpec): SqlQuery {
  const select: string[] = [];
  const aliases: string[] = [];
  const joins: string[] = [];
  const joinParams: SqlValue[] = [];
  const bucket = bucketExpr('r.ts', spec.interval);
  if (bucket) {
    select.push(`${bucket} AS bucket`);
    aliases.push('bucket');
  }
  spec.groupBy.forEach((dim, i) => {
    if (dim.kind === 'builtin') {
      select.push(`r.${dim.column} AS g${i}`);
    } else {
      // One LEFT JOIN per grouped tag key: a record whose set lacks the key yields NULL -> "(untagged)".
      joins.push(
        `LEFT JOIN ${TAG_SET_MEMBERS_TABLE} t${i} ON t${i}.set_id = r.${RECORD_TAG_SET_COLUMN} AND t${i}.key = ?`,
      );
      joinParams.push(dim.key);
      select.push(`t${i}.value AS g${i}`);
    }
    aliases.push(`g${i}`);
  });
  select.push(...aggregateSelect(d, (c) => c.rawSql));

  const w = new Where();
  const source = rawSource(d, w, spec.from, spec.to, spec.filters, spec.via);
  const sql = [`SELECT ${select.join(',\n  ')}`, source.from, ...joins, String(w), groupClause(aliases)]
    .filter(Boolean)
    .join('\n');
  return { sql: d.sql(sql), params: [...source.params, ...joinParams, ...w.params].map(d.bind) as SqlValue[] };
}

export interface ListSpec {
  from: number;
  to: number;
  filters: ParsedFilters;
  order: 'asc' | 'desc';
  /** Keyset position: rows strictly after it in `order`. */
  after?: { ts: number; id: string };
  limit: number;
  /** How a tag filter on a value finds the records (RawVia). */
  via: RawVia;
}

export function listRecordsSql(d: SqlDialect, spec: ListSpec): SqlQuery {
  const w = new Where();
  const source = rawSource(d, w, spec.from, spec.to, spec.filters, spec.via);
  const op = spec.order === 'desc' ? '<' : '>';
  if (spec.after) w.add(`(r.ts ${op} ? OR (r.ts = ? AND r.id ${op} ?))`, spec.after.ts, spec.after.ts, spec.after.id);
  const dir = spec.order === 'desc' ? 'DESC' : 'ASC';
  const sql = [
    `SELECT ${RECORD_COLUMNS.map((c) => `r.${c}`).join(', ')}`,
    source.from,
    String(w),
    `ORDER BY r.ts ${dir}, r.id ${dir}`,
    'LIMIT ?',
  ].join('\n');
  return { sql: d.sql(sql), params: [...source.params, ...w.params, spec.limit].map(d.bind) as SqlValue[] };
}
