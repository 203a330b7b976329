/**
 * PostgreSQL usage store (pg Pool): for several gateway instances sharing one database.
 * Each batch is one transaction of a few statements whatever its size: rows are sent as one
 * array per column and expanded with unnest(), which also avoids pg's 65535-parameter limit.
 */
import type { Pool, PoolClient } from 'pg';
import type { UsageRecord } from '../core/usage';
import { RECORD_COLUMNS, dedupeById, flag, recordValues, toNumber, type SqlValue } from './codec';
import { COUNTER_COLUMNS } from './counters';
import { postgresDialect as d } from './dialect';
import { KEY_COLUMNS, checkNewKey, keyFromRow, keyValues } from './keys';
import { LATEST_VERSION, SCHEMA_MIGRATIONS_DDL, newerVersions, pendingMigrations } from './migrations/index';
import { maintainPartitions } from './postgres-partitions';
import { listTagKeys } from './query/dimensions';
import { listPage } from './query/list';
import { runUsageQuery, type Exec } from './query/run';
import { repriceDeltas, repriceRecords, type Change } from './reprice';
import { MaintenanceRuns, RAISE_MARK_SQL, READ_MARK_SQL, RECORDS_KEPT_FROM } from './retention';
import {
  DAILY_COUNTER_COLUMNS,
  DAILY_DIM_COLUMNS,
  DAILY_TABLE,
  ROLLUP_DIM_COLUMNS,
  ROLLUP_TABLE,
  RollupAccumulator,
  TAG_DAILY_DIM_COLUMNS,
  TAG_DAILY_TABLE,
  TAG_ROLLUP_DIM_COLUMNS,
  TAG_ROLLUP_TABLE,
  TAG_SET_DAILY_DIM_COLUMNS,
  TAG_SET_DAILY_TABLE,
  rollupUpsertSql,
  type RollupDeltas,
} from './rollup';
import type { QuarantinedRecord } from './quarantine';
import { RECORD_TAG_SET_COLUMN, TagSetIds, tagSetKey } from './tag-sets';
import type {
  GatewayKey,
  InsertResult,
  ListRequestsQuery,
  MaintenanceOptions,
  MaintenanceResult,
  MigrateResult,
  NewGatewayKey,
  RepriceFn,
  RepriceResult,
  RequestPage,
  StorageLogger,
  UsageFilter,
  UsageGroupRow,
  UsageQuery,
  UsageStore,
} from './store';

export interface PostgresStoreOptions {
  /** Schema for all tables (created by migrate); default: the connection's search_path. */
  schema?: string;
  /** Pool size, default 10. */
  poolSize?: number;
  /** Give up connecting after this long, default 5000 ms (a down database must fail fast, not hang the writer). */
  connectTimeoutMs?: number;
  logger?: StorageLogger;
}

/** Element types of the unnest() arrays, in RECORD_COLUMNS order. */
const RECORD_TYPES: Record<(typeof RECORD_COLUMNS)[number], string> = {
  id: 'text',
  ts: 'int8',
  workspace_id: 'text',
  key_id: 'text',
  provider: 'text',
  model: 'text',
  served_model: 'text',
  endpoint: 'text',
  status: 'int4',
  streamed: 'bool',
  input_tokens: 'int8',
  output_tokens: 'int8',
  cache_read_tokens: 'int8',
  cache_write_tokens: 'int8',
  cache_write_1h_tokens: 'int8',
  reasoning_tokens: 'int8',
  citation_tokens: 'int8',
  search_queries: 'int8',
  search_context_size: 'text',
  cost_pico: 'int8',
  provenance: 'text',
  price_version: 'text',
  latency_ms: 'int4',
  ttfb_ms: 'int4',
  tags: 'jsonb',
  error_code: 'text',
  usage_source: 'text',
  provider_cost_pico: 'int8',
  cost_disagrees: 'int4',
  tool_calls: 'text',
  price_id: 'text',
};
const DIM_TYPES: Record<string, string> = { hour: 'int8', day: 'int8', status: 'int4', set_id: 'int8' };
const rollupTypes = (dims: readonly string[]): string[] => [
  ...dims.map((c) => DIM_TYPES[c] ?? 'text'),
  ...COUNTER_COLUMNS.map(() => 'int8'),
];

/** `SELECT * FROM unnest($1::t1[], $2::t2[], ...)`. */
function unnest(types: string[]): string {
  return `SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`;
}

/** Row-major values to one array per column. */
function columns(rows: readonly (readonly SqlValue[])[], width: number): unknown[][] {
  const cols: unknown[][] = Array.from({ length: width }, () => new Array<unknown>(rows.length));
  rows.forEach((row, i) => row.forEach((v, j) => (cols[j][i] = d.bind(v))));
  return cols;
}

const INSERT_RECORDS = `INSERT INTO usage_records (${RECORD_COLUMNS.join(', ')}, ${RECORD_TAG_SET_COLUMN})
${unnest([...RECORD_COLUMNS.map((c) => RECORD_TYPES[c]), 'int8'])}
ON CONFLICT (id, ts) DO NOTHING
RETURNING id`;
const UPSERT_BASE = rollupUpsertSql(ROLLUP_TABLE, ROLLUP_DIM_COLUMNS, unnest(rollupTypes(ROLLUP_DIM_COLUMNS)));
const UPSERT_TAGS = rollupUpsertSql(
  TAG_ROLLUP_TABLE,
  TAG_ROLLUP_DIM_COLUMNS,
  unnest(rollupTypes(TAG_ROLLUP_DIM_COLUMNS)),
);
const dailyUpsert = (table: string, dims: readonly string[]) =>
  rollupUpsertSql(
    table,
    dims,
    unnest([...dims.map((c) => DIM_TYPES[c] ?? 'text'), ...DAILY_COUNTER_COLUMNS.map(() => 'int8')]),
    DAILY_COUNTER_COLUMNS,
  );
const UPSERT_DAILY = dailyUpsert(DAILY_TABLE, DAILY_DIM_COLUMNS);
const UPSERT_TAG_DAILY = dailyUpsert(TAG_DAILY_TABLE, TAG_DAILY_DIM_COLUMNS);
const UPSERT_TAG_SET_DAILY = dailyUpsert(TAG_SET_DAILY_TABLE, TAG_SET_DAILY_DIM_COLUMNS);
// Tag sets are found by sha256 of their canonical text (migration 004). New ones are inserted in the order given
// (sorted), with their members in the same statement: two instances creating the same sets wait for each other in
// one order, never in a cycle. A set that another transaction inserted first is skipped (DO NOTHING waits for that
// transaction's outcome) and read by FIND_TAG_SETS, a later statement, which sees it committed.
const CREATE_TAG_SETS = `WITH created AS (
  INSERT INTO tag_sets (canon, digest)
  SELECT c, sha256(convert_to(c, 'UTF8')) FROM unnest($1::text[]) WITH ORDINALITY AS u (c, n) ORDER BY n
  ON CONFLICT (digest) DO NOTHING
  RETURNING id, canon
), members AS (
  INSERT INTO tag_set_members (set_id, key, value)
  SELECT created.id, e ->> 0, e ->> 1 FROM created, jsonb_array_elements(created.canon::jsonb) AS e
)
SELECT id, canon FROM created`;
const FIND_TAG_SETS = `SELECT id, canon FROM tag_sets WHERE digest IN (SELECT sha256(convert_to(c, 'UTF8')) FROM unnest($1::text[]) AS u (c))`;
// Compare-and-set: only records still carrying the old values change (and are corrected in the rollups). Found by
// their primary key (id, ts): the ts also picks the month partition (migration 007).
const REPRICE = `UPDATE usage_records u
SET cost_pico = v.cost_pico, provenance = v.provenance, price_version = v.price_version,
  usage_source = v.usage_source, price_id = v.price_id, cost_disagrees = v.cost_disagrees
FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::int8[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int4[])
  AS v (id, ts, cost_pico, provenance, price_version, old_cost_pico, old_provenance, old_price_version, usage_source, price_id, cost_disagrees)
WHERE u.id = v.id AND u.ts = v.ts
  AND u.cost_pico IS NOT DISTINCT FROM v.old_cost_pico
  AND u.provenance = v.old_provenance
  AND u.price_version IS NOT DISTINCT FROM v.old_price_version
RETURNING u.id`;

const QUARANTINE = `INSERT INTO quarantined_records (digest, record_id, record_ts, quarantined_at, error_code, error_message, record_json)
${unnest(['text', 'text', 'int8', 'int8', 'text', 'text', 'text'])}
ON CONFLICT (digest) DO NOTHING`;

/** Serialises migrations of concurrently starting instances (any stable 64-bit number). */
const MIGRATION_LOCK = 7_162_022_001;
/** Held by the instance running the background maintenance; the others skip their run. */
const MAINTENANCE_LOCK = 7_162_022_002;

export class PostgresUsageStore implements UsageStore {
  readonly dialect = 'postgres' as const;
  private readonly pool: Pool;
  private readonly schema?: string;
  private readonly log?: StorageLogger;
  /** Ids of the tag sets this instance wrote lately (storage/tag-sets.ts). */
  private readonly tagSets = new TagSetIds();
  private readonly maintenance = new MaintenanceRuns();

  constructor(url: string, opts: PostgresStoreOptions = {}) {
    if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(opts.schema))
      throw new Error(`invalid schema name ${opts.schema}`);
    this.schema = opts.schema;
    this.log = opts.logger;
    // pg is loaded here, on first use: SQLite deployments need not load it (~2 MiB of resident memory at start).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, see above
    const { Pool } = require('pg') as typeof import('pg');
    this.pool = new Pool({
      connectionString: url,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      // JIT compilation pays off for queries that run for seconds; the dashboard's run for tens to hundreds of ms,
      // and a compile (tens of ms) only adds to them.
      options: [`-c jit=off`, ...(opts.schema ? [`-c search_path=${opts.schema}`] : [])].join(' '),
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    this.pool.on('error', (err) => this.log?.warn({ err }, 'postgres idle client error'));
  }

  private async tx<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    let broken: Error | undefined;
    // A connection lost mid-transaction makes the client emit 'error', and the pool listens only to idle clients:
    // unheard, that event would crash the process. The pending query rejects anyway; the client is discarded.
    const onError = (err: Error) => (broken = err);
    c.on('error', onError);
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      c.off('error', onError);
      c.release(broken);
    }
  }

  private readonly exec: Exec = async (q) =>
    (await this.pool.query(q.sql, q.params as unknown[])).rows as Record<string, unknown>[];

  /**
   * Whether Tollgate's tables exist here (a migration ran once), creating nothing. to_regclass resolves through
   * search_path, which holds the configured schema, and answers null when that schema does not exist.
   */
  async hasSchema(): Promise<boolean> {
    const { rows } = await this.pool.query<{ found: string | null }>(
      "SELECT to_regclass('schema_migrations')::text AS found",
    );
    return rows[0]?.found != null;
  }

  async migrate(): Promise<MigrateResult> {
    const { applied, done } = await this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      if (this.schema) await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await c.query(SCHEMA_MIGRATIONS_DDL.postgres);
      const applied = (await c.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) =>
        Number(r.version),
      );
      const newer = newerVersions(applied);
      if (newer.length)
        this.log?.warn({ versions: newer, known: LATEST_VERSION }, 'database has migrations newer than this build');
      const done: number[] = [];
      for (const m of pendingMigrations(applied)) {
        await c.query(m.postgres);
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          Date.now(),
        ]);
        done.push(m.version);
      }
      return { applied, done };
    });
    if (done.length) this.log?.info({ applied: done }, 'storage migrations applied');
    this.tagSets.clear(); // a migration may have rebuilt the tag set tables
    return { applied: done, version: Math.max(0, ...applied, ...done) };
  }

  /**
   * The tag set id of each record (in order), creating the sets not yet stored, in transaction `c`: one statement
   * for the sets missing from the cache (two if another instance created some of them), none when all are cached.
   * Ids read or created go to `found`, the transaction's own map, cached once it commits (withTagSets).
   */
  private async tagSetIds(
    c: PoolClient,
    records: readonly UsageRecord[],
    found: Map<string, number>,
  ): Promise<number[]> {
    const keys = records.map(tagSetKey);
    const missing = [...new Set(keys.filter((k) => this.tagSets.get(k) === undefined && !found.has(k)))].sort();
    if (missing.length) {
      const created = (await c.query<{ id: string; canon: string }>(CREATE_TAG_SETS, [missing])).rows;
      for (const s of created) found.set(s.canon, Number(s.id));
      const rest = missing.filter((k) => !found.has(k));
      if (rest.length)
        for (const s of (await c.query<{ id: string; canon: string }>(FIND_TAG_SETS, [rest])).rows)
          found.set(s.canon, Number(s.id));
    }
    return keys.map((k) => {
      const id = this.tagSets.get(k) ?? found.get(k);
      if (id === undefined) throw new Error(`tag set not found after insert: ${k.slice(0, 200)}`);
      return id;
    });
  }

  /** A transaction that may find or create tag sets: their ids are cached only if it commits. */
  private async withTagSets<T>(fn: (c: PoolClient, found: Map<string, number>) => Promise<T>): Promise<T> {
    const found = new Map<string, number>();
    const out = await this.tx((c) => fn(c, found));
    this.tagSets.remember(found);
    return out;
  }

  private async applyDeltas(c: PoolClient, deltas: RollupDeltas): Promise<void> {
    if (deltas.base.length)
      await c.query(UPSERT_BASE, columns(deltas.base, ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length));
    if (deltas.tags.length)
      await c.query(UPSERT_TAGS, columns(deltas.tags, TAG_ROLLUP_DIM_COLUMNS.length + COUNTER_COLUMNS.length));
    if (deltas.daily.length)
      await c.query(UPSERT_DAILY, columns(deltas.daily, DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length));
    if (deltas.tagDaily.length)
      await c.query(
        UPSERT_TAG_DAILY,
        columns(deltas.tagDaily, TAG_DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length),
      );
    if (deltas.tagSetDaily.length) {
      await c.query(
        UPSERT_TAG_SET_DAILY,
        columns(deltas.tagSetDaily, TAG_SET_DAILY_DIM_COLUMNS.length + DAILY_COUNTER_COLUMNS.length),
      );
    }
  }

  async insertBatch(records: readonly UsageRecord[]): Promise<InsertResult> {
    if (records.length === 0) return { inserted: 0, duplicates: 0 };
    // Sorted by id: two instances inserting overlapping batches lock the same rows in the same order.
    const unique = dedupeById(records).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const inserted = await this.withTagSets(async (c, found) => {
      const setIds = await this.tagSetIds(c, unique, found);
      const rows = unique.map((r, i) => [...recordValues(r), setIds[i]]);
      const res = await c.query<{ id: string }>(INSERT_RECORDS, columns(rows, RECORD_COLUMNS.length + 1));
      // Only rows actually inserted (RETURNING skips ids already stored) get rollup increments.
      const fresh = new Set(res.rows.map((r) => r.id));
      const acc = new RollupAccumulator();
      unique.forEach((r, i) => {
        if (fresh.has(r.id)) acc.add(r, setIds[i]);
      });
      await this.applyDeltas(c, acc.result());
      return fresh.size;
    });
    return { inserted, duplicates: records.length - inserted };
  }

  async quarantine(entries: readonly QuarantinedRecord[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map((e): SqlValue[] => [
      e.digest,
      e.recordId,
      e.recordTs,
      e.quarantinedAt,
      e.errorCode,
      e.errorMessage,
      e.recordJson,
    ]);
    await this.pool.query(QUARANTINE, columns(rows, 7));
  }

  /** The server answers, and takes writes: not a standby, not read-only by default. */
  async checkWritable(): Promise<void> {
    const { rows } = await this.pool.query<{ standby: boolean; read_only: string }>(
      "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS read_only",
    );
    if (rows[0].standby || rows[0].read_only === 'on')
      throw new Error('PostgreSQL takes no writes (a standby, or read-only transactions)');
  }

  async countQuarantined(): Promise<number> {
    return Number((await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM quarantined_records')).rows[0].n);
  }

  queryUsage(query: UsageQuery): Promise<UsageGroupRow[]> {
    return runUsageQuery(d, this.exec, query);
  }

  listRequests(query: ListRequestsQuery): Promise<RequestPage> {
    return listPage(d, this.exec, query);
  }

  listTagKeys(): Promise<string[]> {
    return listTagKeys(d, this.exec);
  }

  repriceAll(fn: RepriceFn, filter?: Partial<UsageFilter>): Promise<RepriceResult> {
    const apply = (changes: Change[]): Promise<Change[]> =>
      this.withTagSets(async (c, found) => {
        const rows = changes.map(({ old, next }): SqlValue[] => [
          old.id,
          old.ts,
          next.costPico,
          next.provenance,
          next.priceVersion,
          old.costPico,
          old.provenance,
          old.priceVersion,
          next.usageSource ?? null,
          next.priceId ?? null,
          flag(next.costDisagrees),
        ]);
        const res = await c.query<{ id: string }>(REPRICE, columns(rows, 11));
        const updated = new Set(res.rows.map((r) => r.id));
        const done = changes.filter((ch) => updated.has(ch.old.id));
        await this.applyDeltas(
          c,
          repriceDeltas(
            done,
            await this.tagSetIds(
              c,
              done.map((ch) => ch.old),
              found,
            ),
          ).result(),
        );
        return done;
      });
    return repriceRecords(d, this.exec, apply, fn, filter);
  }

  async insertKey(key: NewGatewayKey): Promise<GatewayKey> {
    const k = checkNewKey(key);
    await this.pool.query(`INSERT INTO keys (${KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, keyValues(k));
    return k;
  }

  async listKeys(workspaceId?: string): Promise<GatewayKey[]> {
    const res =
      workspaceId === undefined
        ? await this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at, id`)
        : await this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE workspace_id = $1 ORDER BY created_at, id`, [
            workspaceId,
          ]);
    return res.rows.map(keyFromRow);
  }

  async findKeyByHash(hash: string): Promise<GatewayKey | undefined> {
    const res = await this.pool.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE hash = $1`, [hash]);
    return res.rows[0] && keyFromRow(res.rows[0]);
  }

  async revokeKey(id: string, at = Date.now()): Promise<boolean> {
    const res = await this.pool.query('UPDATE keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id]);
    return res.rowCount === 1;
  }

  async touchKeys(ids: readonly string[], lastUsedAt: number): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(
      'UPDATE keys SET last_used_at = $1 WHERE id = ANY($2::text[]) AND (last_used_at IS NULL OR last_used_at < $1)',
      [lastUsedAt, [...new Set(ids)]],
    );
  }

  maintain(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    return this.maintenance.track(this.maintainOnOneClient(opts));
  }

  private async maintainOnOneClient(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    const nothing: MaintenanceResult = {
      deleted: 0,
      deleteStatements: 0,
      droppedPartitions: [],
      createdPartitions: [],
    };
    if (this.maintenance.closing) return { ...nothing, skipped: 'closing' };
    const c = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => (broken = err);
    c.on('error', onError);
    try {
      // A session lock: held across the run's transactions and autocommit batches, released with the connection.
      const { ok } = (await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MAINTENANCE_LOCK]))
        .rows[0];
      if (!ok) return { ...nothing, skipped: 'locked' };
      try {
        if (opts.retention) await c.query(d.sql(RAISE_MARK_SQL), [RECORDS_KEPT_FROM, opts.retention.before]);
        return await maintainPartitions(c, opts, () => this.maintenance.closing);
      } finally {
        await c.query('SELECT pg_advisory_unlock($1)', [MAINTENANCE_LOCK]).catch((e: Error) => (broken = e));
      }
    } catch (err) {
      broken ??= err as Error;
      throw err;
    } finally {
      c.off('error', onError);
      c.release(broken);
    }
  }

  async recordsKeptFrom(): Promise<number | null> {
    const [row] = await this.exec({ sql: d.sql(READ_MARK_SQL), params: [RECORDS_KEPT_FROM] });
    return row ? toNumber(row.value) : null;
  }

  async close(): Promise<void> {
    await this.maintenance.stop();
    if (!this.pool.ended) await this.pool.end();
  }
}
