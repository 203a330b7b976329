/**
 * SQL text for the usage queries, shared by both dialects. Builders use `?` placeholders
 * (dialect.sql rewrites them for pg) and only inline constants chosen here, never input.
 * Aggregate queries alias the bucket as `bucket`, the i-th groupBy value as `g<i>` and the
 * counters by their rollup column names (see decodeAggregate).
 */
import { RECORD_COLUMNS, type SqlValue } from '../codec';
import { COUNTERS } from '../counters';
import type { SqlDialect } from '../dialect';
import { DAILY_TABLE, DAY_MS, HOUR_MS, ROLLUP_TABLE, TAG_DAILY_TABLE, TAG_ROLLUP_TABLE, TAG_SET_DAILY_TABLE } from '../rollup';
import { UNTAGGED, type Interval } from '../store';
import { TAG_SET_MEMBERS_TABLE, TAG_SETS_TABLE } from '../tag-sets';
import type { BuiltinDim, BuiltinFilter, Dim, ParsedFilters, TagDim, TagFilter } from './plan';

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
  return COUNTERS.map((c) => (c.field === 'costPico' ? d.sumMoney(counterExpr(c), c.column) : `SUM(${counterExpr(c)}) AS ${c.column}`));
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
  /** Reads usage_tag_rollup_hourly for this key instead of usage_rollup_hourly. */
  tag?: { key: string; value?: string; groupIndex?: number };
  /** Reads the daily tables (whole days; no built-in grouping or filter, no hourly interval). */
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
    aliases.push(`g${spec.tag.groupIndex}`);
  }
  select.push(
    ...(spec.daily
      ? COUNTERS.map((c) => (c.field === 'costPico' ? d.sumSplitMoney('cost_pico_hi', 'cost_pico_lo', c.column) : `SUM(${c.column}) AS ${c.column}`))
      : aggregateSelect(d, (c) => c.column)),
  );

  const w = new Where();
  if (spec.tag) w.add('tag_key = ?', spec.tag.key);
  w.add(`${time} >= ?`, spec.from);
  w.add(`${time} < ?`, spec.to);
  if (spec.tag?.value !== undefined) w.add('tag_value = ?', spec.tag.value);
  for (const f of spec.builtinFilters) rollupBuiltinFilter(w, f);

  const table = spec.daily ? (spec.tag ? TAG_DAILY_TABLE : DAILY_TABLE) : spec.tag ? TAG_ROLLUP_TABLE : ROLLUP_TABLE;
  const sql = [`SELECT ${select.join(',\n  ')}`, `FROM ${table}`, String(w), groupClause(aliases)].filter(Boolean).join('\n');
  return { sql: d.sql(sql), params: w.params.map(d.bind) as SqlValue[] };
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
 * The candidate sets are those carrying every filter value, found through tag_set_members (key, value, set_id);
 * with no value filter, every set is a candidate. Each
 * candidate's member values are looked up once per set rather than once per day, and each set's days are one
 * seek on the (set_id, day) key.
 *
 * SQLite keeps the written join order (CROSS JOIN). PostgreSQL plans freely, and its estimate of how many sets
 * carry a (key, value) pair is poor (keys and values are correlated): with a value filter it hash-joined the whole
 * daily table and every member of the grouped key (440 ms at a million records, bench/dashboard.ts), where one
 * index seek per candidate set takes a third of that. So when a value filter bounds the candidates, PostgreSQL
 * gets the per-set form: member values as scalar subqueries and the daily rows as a LATERAL subquery, both behind
 * OFFSET 0 so that the planner cannot flatten them back into a hash join. Without a value filter every set is a
 * candidate and the hash join is the better plan, so it is left to the planner.
 */
export function tagSetAggregateSql(d: SqlDialect, spec: TagSetSpec): SqlQuery {
  const values = spec.tags.filter((t) => t.value !== UNTAGGED);
  const setParams = values.flatMap((t) => [t.key, t.value]);
  const untagged = spec.tags.filter((t) => t.value === UNTAGGED);
  const perSet = values.length > 0 && d.reordersJoins;
  const untaggedCond = (set: string) => `NOT EXISTS (SELECT 1 FROM ${TAG_SET_MEMBERS_TABLE} u WHERE u.set_id = ${set}.set_id AND u.key = ?)`;

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
  select.push(...COUNTERS.map((c) => (c.field === 'costPico' ? d.sumSplitMoney('r.cost_pico_hi', 'r.cost_pico_lo', c.column) : `SUM(r.${c.column}) AS ${c.column}`)));
  const groupKeys = spec.groupBy.map((dim) => dim.key);

  if (perSet) {
    // The candidates as a join on the members' (set_id, key) key: the planner drives it from the filter it expects
    // to be the most selective and probes the others, where INTERSECT reads every filter's whole list (a series of
    // the chart, three filters: 30 ms -> 3 ms; the table, two filters: 180 -> 100 ms, at a million records).
    const candidates = `SELECT f0.set_id FROM ${values.map((_, i) => (i === 0 ? `${TAG_SET_MEMBERS_TABLE} f0` : `JOIN ${TAG_SET_MEMBERS_TABLE} f${i} ON f${i}.set_id = f0.set_id`)).join(' ')} WHERE ${values.map((_, i) => `f${i}.key = ? AND f${i}.value = ?`).join(' AND ')}`;
    const members = spec.groupBy.map((_, i) => `(SELECT m.value FROM ${TAG_SET_MEMBERS_TABLE} m WHERE m.set_id = x.set_id AND m.key = ?) AS g${i}`);
    const inner = new Where();
    for (const t of untagged) inner.add(untaggedCond('x'), t.key);
    const sql = [
      `SELECT ${select.join(',\n  ')}`,
      `FROM (SELECT ${['x.set_id', ...members].join(', ')} FROM (${candidates}) x ${String(inner)} OFFSET 0) s`,
      `CROSS JOIN LATERAL (SELECT * FROM ${TAG_SET_DAILY_TABLE} r WHERE r.set_id = s.set_id AND r.day >= ? AND r.day < ? OFFSET 0) r`,
      groupClause(aliases),
    ].join('\n');
    return { sql: d.sql(sql), params: [...groupKeys, ...setParams, ...inner.params, spec.from, spec.to].map(d.bind) as SqlValue[] };
  }

  const sets = values.length
    ? values.map(() => `SELECT set_id FROM ${TAG_SET_MEMBERS_TABLE} WHERE key = ? AND value = ?`).join(' INTERSECT ')
    : `SELECT id AS set_id FROM ${TAG_SETS_TABLE}`;
  const joins = spec.groupBy.map((_, i) => `LEFT JOIN ${TAG_SET_MEMBERS_TABLE} m${i} ON m${i}.set_id = s.set_id AND m${i}.key = ?`);
  const w = new Where();
  for (const t of untagged) w.add(untaggedCond('s'), t.key);
  w.add('r.set_id = s.set_id');
  w.add('r.day >= ?', spec.from);
  w.add('r.day < ?', spec.to);
  const sql = [`SELECT ${select.join(',\n  ')}`, `FROM (${sets}) s`, ...joins, `CROSS JOIN ${TAG_SET_DAILY_TABLE} r`, String(w), groupClause(aliases)].join('\n');
  return { sql: d.sql(sql), params: [...setParams, ...groupKeys, ...w.params].map(d.bind) as SqlValue[] };
}

/**
 * The FROM clause and the conditions selecting usage_records `r` by time range and filters (tags through
 * record_tags). With a tag filter on a value, the query is driven from that tag's (key, value, ts) index
 * (`dt` joined to `r`): only the tagged records are visited, already in time order for the newest-first
 * listing, instead of building the whole id list of the tag first.
 */
function rawSource(w: Where, from: number, to: number, filters: ParsedFilters): { from: string; driven: boolean } {
  const drive = filters.tags.find((t) => t.value !== UNTAGGED);
  if (drive) {
    w.add('dt.key = ?', drive.key);
    w.add('dt.value = ?', drive.value);
    w.add('dt.ts >= ?', from);
    w.add('dt.ts < ?', to);
  }
  w.add('r.ts >= ?', from);
  w.add('r.ts < ?', to);
  for (const f of filters.builtins) rawBuiltinFilter(w, f);
  for (const t of filters.tags) {
    if (t === drive) continue;
    if (t.value === UNTAGGED) {
      w.add('NOT EXISTS (SELECT 1 FROM record_tags ft WHERE ft.record_id = r.id AND ft.key = ?)', t.key);
    } else {
      // The (key, value, ts) index finds a tag's records in the range without scanning all records.
      w.add('r.id IN (SELECT ft.record_id FROM record_tags ft WHERE ft.key = ? AND ft.value = ? AND ft.ts >= ? AND ft.ts < ?)', t.key, t.value, from, to);
    }
  }
  return drive ? { from: 'FROM record_tags dt JOIN usage_records r ON r.id = dt.record_id', driven: true } : { from: 'FROM usage_records r', driven: false };
}

export interface RawSpec {
  from: number;
  to: number;
  groupBy: Dim[];
  filters: ParsedFilters;
  interval?: Interval;
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
      // One LEFT JOIN per grouped tag key: a record without the tag yields NULL -> "(untagged)".
      joins.push(`LEFT JOIN record_tags t${i} ON t${i}.record_id = r.id AND t${i}.key = ?`);
      joinParams.push(dim.key);
      select.push(`t${i}.value AS g${i}`);
    }
    aliases.push(`g${i}`);
  });
  select.push(...aggregateSelect(d, (c) => c.rawSql));

  const w = new Where();
  const source = rawSource(w, spec.from, spec.to, spec.filters);
  const sql = [`SELECT ${select.join(',\n  ')}`, source.from, ...joins, String(w), groupClause(aliases)].filter(Boolean).join('\n');
  return { sql: d.sql(sql), params: [...joinParams, ...w.params].map(d.bind) as SqlValue[] };
}

export interface ListSpec {
  from: number;
  to: number;
  filters: ParsedFilters;
  order: 'asc' | 'desc';
  /** Keyset position: rows strictly after it in `order`. */
  after?: { ts: number; id: string };
  limit: number;
}

export function listRecordsSql(d: SqlDialect, spec: ListSpec): SqlQuery {
  const w = new Where();
  const source = rawSource(w, spec.from, spec.to, spec.filters);
  // dt.ts and dt.record_id equal r.ts and r.id; ordering by them lets the tag index give the order.
  const [ts, id] = source.driven ? ['dt.ts', 'dt.record_id'] : ['r.ts', 'r.id'];
  const op = spec.order === 'desc' ? '<' : '>';
  if (spec.after) w.add(`(${ts} ${op} ? OR (${ts} = ? AND ${id} ${op} ?))`, spec.after.ts, spec.after.ts, spec.after.id);
  const dir = spec.order === 'desc' ? 'DESC' : 'ASC';
  const sql = [
    `SELECT ${RECORD_COLUMNS.map((c) => `r.${c}`).join(', ')}`,
    source.from,
    String(w),
    `ORDER BY ${ts} ${dir}, ${id} ${dir}`,
    'LIMIT ?',
  ].join('\n');
  return { sql: d.sql(sql), params: [...w.params, spec.limit].map(d.bind) as SqlValue[] };
}
