/**
 * PostgreSQL usage store (pg Pool): for several gateway instances sharing one database.
 * Each batch is one transaction of a few statements whatever its size: the records by COPY (storage/postgres-copy.ts),
 * the rollup increments as one array per column expanded with unnest(), which also avoids pg's 65535-parameter limit.
 */
import type { Pool, PoolClient } from 'pg';
import type { UsageRecord } from '../records/usage-record';
import { RECORD_COLUMNS, dedupeById, recordValues, type SqlValue } from './codec';
import { AlertOutbox } from './alert-outbox';
import { BatchJobTable } from './batch-jobs';
import { RuntimeBudgetTable } from './runtime-budget-table';
import { SpendFreezeTable } from './spend-freeze-table';
import { ReconciliationRuns } from './reconciliation-runs';
import { ReconciliationSchedule } from './reconciliation-schedule';
import { RepriceLog } from './reprice-log';
import { postgresDialect as d } from './dialect';
import { KEY_CHANGES_SQL, KEY_COLUMNS, keyChangeFromRow, keyFromRow, type KeyChange } from './keys';
import { insertPostgresKeys, revokePostgresKey } from './postgres-keys';
import { columns, unnest } from './postgres-column-arrays';
import { copyRows } from './postgres-copy';
import { migratePostgres } from './postgres-migrate';
import { maintainOnOneClient } from './postgres-partitions';
import { postgresPool, withClient } from './postgres-pool';
import { updateCosts } from './postgres-reprice';
import { applyRollupDeltas } from './postgres-rollup-writes';
import { postgresTagSetIds } from './postgres-tag-sets';
import type { ReadSource } from './read-connection';
import { listTagKeys } from './query/dimensions';
import { listPage } from './query/list';
import { runUsageQuery, type Exec } from './query/run';
import { repriceDeltas, repriceRecords, type Change } from './reprice';
import { MaintenanceRuns, readRecordsKeptFrom } from './retention';
import { RollupAccumulator } from './rollup';
import { QUARANTINE_COLUMNS, quarantineValues, type QuarantinedRecord } from './quarantine';
import { RECORD_TAG_SET_COLUMN, TagSetIds } from './tag-sets';
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
  service_tier: 'text',
  input_audio_tokens: 'int8',
  output_audio_tokens: 'int8',
  generation_id: 'text',
  upstream_ms: 'int4',
  list_cost_pico: 'int8',
};
const INSERT_RECORDS = `INSERT INTO usage_records (${RECORD_COLUMNS.join(', ')}, ${RECORD_TAG_SET_COLUMN})
${unnest([...RECORD_COLUMNS.map((c) => RECORD_TYPES[c]), 'int8'])}
ON CONFLICT (id, ts) DO NOTHING
RETURNING id`;

/** SQLSTATE unique_violation. */
const UNIQUE_VIOLATION = '23505';

/** COPY of rows none of which is stored yet (else unique_violation): 'all' of them were inserted. */
async function copyRecords(c: PoolClient, rows: SqlValue[][]): Promise<'all'> {
  await copyRows(c, 'usage_records', [...RECORD_COLUMNS, RECORD_TAG_SET_COLUMN], rows);
  return 'all';
}

/** INSERT of the rows, skipping the ids already stored: the ids inserted. */
async function insertNewRecords(c: PoolClient, rows: SqlValue[][]): Promise<Set<string>> {
  const res = await c.query<{ id: string }>(INSERT_RECORDS, columns(rows, RECORD_COLUMNS.length + 1));
  return new Set(res.rows.map((r) => r.id));
}

const QUARANTINE = `INSERT INTO quarantined_records (${QUARANTINE_COLUMNS})
${unnest(['text', 'text', 'int8', 'int8', 'text', 'text', 'text'])}
ON CONFLICT (digest) DO NOTHING`;

export class PostgresUsageStore implements UsageStore {
  readonly dialect = 'postgres' as const;
  private readonly pool: Pool;
  private readonly schema?: string;
  private readonly log?: StorageLogger;
  /** Ids of the tag sets this instance wrote lately (storage/tag-sets.ts). */
  private readonly tagSets = new TagSetIds();
  private readonly maintenance = new MaintenanceRuns();

  constructor(
    private readonly url: string,
    opts: PostgresStoreOptions = {},
  ) {
    if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(opts.schema))
      throw new Error(`invalid schema name ${opts.schema}`);
    this.schema = opts.schema;
    this.log = opts.logger;
    this.pool = postgresPool(url, {
      size: opts.poolSize ?? 10,
      connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      schema: opts.schema,
      logger: opts.logger,
    });
  }

  private tx<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    return withClient(this.pool, async (c, discard) => {
      try {
        await c.query('BEGIN');
        const out = await fn(c);
        await c.query('COMMIT');
        return out;
      } catch (err) {
        await c.query('ROLLBACK').catch(discard);
        throw err;
      }
    });
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
    const { applied, done } = await withClient(this.pool, (c) => migratePostgres(c, this.schema, this.log));
    if (done.length) this.log?.info({ applied: done }, 'storage migrations applied');
    this.tagSets.clear(); // a migration may have rebuilt the tag set tables
    return { applied: done, version: Math.max(0, ...applied, ...done) };
  }

  /** The tag set id of each record (in order), in transaction `c` (storage/postgres-tag-sets.ts). */
  private tagSetIds(c: PoolClient, records: readonly UsageRecord[], found: Map<string, number>): Promise<number[]> {
    return postgresTagSetIds(c, this.tagSets, records, found);
  }

  /** A transaction that may find or create tag sets: their ids are cached only if it commits. */
  private async withTagSets<T>(fn: (c: PoolClient, found: Map<string, number>) => Promise<T>): Promise<T> {
    const found = new Map<string, number>();
    const out = await this.tx((c) => fn(c, found));
    this.tagSets.remember(found);
    return out;
  }

  /**
   * One transaction: the records' tag sets, the records, their rollup increments. The records go by COPY, the
   * cheapest way in, when none of them is stored yet; a record already stored (a replayed spill file, a batch
   * retried after a timeout that did commit) makes the COPY fail with unique_violation, and the whole transaction
   * is then done again with an INSERT that skips the stored ids. Sorted by id: two instances inserting overlapping
   * batches lock the same rows in the same order.
   */
  async insertBatch(records: readonly UsageRecord[]): Promise<InsertResult> {
    if (records.length === 0) return { inserted: 0, duplicates: 0 };
    const unique = dedupeById(records).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const write = (copy: boolean) =>
      this.withTagSets(async (c, found) => {
        const setIds = await this.tagSetIds(c, unique, found);
        const rows = unique.map((r, i): SqlValue[] => [...recordValues(r), setIds[i]]);
        const fresh = copy ? await copyRecords(c, rows) : await insertNewRecords(c, rows);
        // Only rows actually inserted get rollup increments.
        const acc = new RollupAccumulator();
        unique.forEach((r, i) => {
          if (fresh === 'all' || fresh.has(r.id)) acc.add(r, setIds[i]);
        });
        await applyRollupDeltas(c, acc.result());
        return fresh === 'all' ? unique.length : fresh.size;
      });
    const inserted = await write(true).catch((err: { code?: string }) => {
      if (err?.code !== UNIQUE_VIOLATION) throw err;
      return write(false);
    });
    return { inserted, duplicates: records.length - inserted };
  }

  async quarantine(entries: readonly QuarantinedRecord[]): Promise<void> {
    if (entries.length === 0) return;
    const rows = entries.map(quarantineValues);
    await this.pool.query(QUARANTINE, columns(rows, 7));
  }

  /** The server answers, and takes writes: not a standby, not read-only by default. */
  alertOutbox(): AlertOutbox {
    return new AlertOutbox(d, this.exec);
  }

  runtimeBudgets(): RuntimeBudgetTable {
    return new RuntimeBudgetTable(d, this.exec);
  }

  spendFreezes(): SpendFreezeTable {
    return new SpendFreezeTable(d, this.exec);
  }

  /** The batches created through the gateway (storage/batch-jobs.ts). */
  batchJobs(): BatchJobTable {
    return new BatchJobTable(d, this.exec);
  }

  /** Reconciliation runs (storage/reconciliation-runs.ts), on the store's own connection. */
  reconciliationRuns(): ReconciliationRuns {
    return new ReconciliationRuns(d, this.exec);
  }

  /** The scheduled reconciliation's claims (storage/reconciliation-schedule.ts), on the store's own connection. */
  reconciliationSchedule(): ReconciliationSchedule {
    return new ReconciliationSchedule(d, this.exec);
  }
  /** The repricing audit (storage/reprice-log.ts), on the store's own connection. */
  repriceLog(): RepriceLog {
    return new RepriceLog(d, this.exec);
  }

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

  /** A pool of its own, in the same schema. */
  readSource(): ReadSource {
    return { kind: 'postgres', url: this.url, schema: this.schema };
  }

  listTagKeys(): Promise<string[]> {
    return listTagKeys(d, this.exec);
  }

  repriceAll(fn: RepriceFn, filter?: Partial<UsageFilter>): Promise<RepriceResult> {
    const apply = (changes: Change[]): Promise<Change[]> =>
      this.withTagSets(async (c, found) => {
        const done = await updateCosts(c, changes);
        await applyRollupDeltas(
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
    return (await this.insertKeys([key]))[0];
  }

  insertKeys(keys: readonly NewGatewayKey[]): Promise<GatewayKey[]> {
    return insertPostgresKeys(this.pool, keys);
  }

  async keyChangesSince(seq: number, limit: number): Promise<KeyChange[]> {
    const res = await this.pool.query(
      KEY_CHANGES_SQL((n) => `$${n}`),
      [seq, limit],
    );
    return res.rows.map(keyChangeFromRow);
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

  revokeKey(id: string, at = Date.now()): Promise<boolean> {
    return revokePostgresKey(this.pool, id, at);
  }

  async touchKeys(ids: readonly string[], lastUsedAt: number): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(
      'UPDATE keys SET last_used_at = $1 WHERE id = ANY($2::text[]) AND (last_used_at IS NULL OR last_used_at < $1)',
      [lastUsedAt, [...new Set(ids)]],
    );
  }

  maintain(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    return this.maintenance.track(maintainOnOneClient(this.pool, opts, this.maintenance));
  }

  recordsKeptFrom(): Promise<number | null> {
    return readRecordsKeptFrom(d, this.exec);
  }

  async close(): Promise<void> {
    await this.maintenance.stop();
    if (!this.pool.ended) await this.pool.end();
  }
}
