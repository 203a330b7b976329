/**
 * SQLite usage store (better-sqlite3): embedded default for a single gateway instance.
 * WAL mode so dashboards read while the write queue writes; a busy timeout so a second
 * process (e.g. the CLI) waits for the write lock instead of failing.
 * better-sqlite3 is synchronous: each method does its work in one synchronous call.
 */
import { constants, mkdirSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { UsageRecord } from '../records/usage-record';
import { dedupeById } from './codec';
import { sqliteDialect as d } from './dialect';
import { AlertOutbox } from './alert-outbox';
import { BatchJobTable } from './batch-jobs';
import { RuntimeBudgetTable } from './runtime-budget-table';
import { SpendFreezeTable } from './spend-freeze-table';
import { ReconciliationRuns } from './reconciliation-runs';
import { ReconciliationSchedule } from './reconciliation-schedule';
import { RepriceLog } from './reprice-log';
import {
  KEY_CHANGES_SQL,
  KEY_COLUMNS,
  NEXT_KEY_SEQ,
  checkNewKey,
  keyChangeFromRow,
  keyFromRow,
  keyValues,
  type KeyChange,
} from './keys';
import { LATEST_VERSION, SCHEMA_MIGRATIONS_DDL, newerVersions, pendingMigrations } from './migrations/index';
import { listTagKeys } from './query/dimensions';
import { listPage } from './query/list';
import { runUsageQuery, type Exec } from './query/run';
import { repriceRecords } from './reprice';
import type { ReadSource } from './read-connection';
import { placeholders, sqliteExec } from './sqlite-exec';
import { MaintenanceRuns, RAISE_MARK_SQL, RECORDS_KEPT_FROM, deleteInBatches, readRecordsKeptFrom } from './retention';
import { SqliteWriterThread } from './sqlite-writer';
import { prepareWrites, type SqliteWrites } from './sqlite-writes';
import type { QuarantinedRecord } from './quarantine';
import { TagSetIds } from './tag-sets';
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

export interface SqliteStoreOptions {
  /** How long a writer waits for another connection's lock, default 5000 ms. */
  busyTimeoutMs?: number;
  /** Page cache of this connection in KiB, default 32 MiB (SQLite allocates it as pages are used). */
  cacheKib?: number;
  /**
   * Write usage records and key touches on a worker thread (storage/sqlite-writer.ts), default true for a
   * file; an in-memory database cannot be shared between threads and is always written inline.
   */
  writerThread?: boolean;
  /** Open an existing database file only: create neither it nor its folder. */
  mustExist?: boolean;
  logger?: StorageLogger;
}

/**
 * insertBatch waits at most this long for another connection's write lock (e.g. `tollgate usage reprice`):
 * SQLite's busy wait runs on the event loop and would stall every proxied request, while the write queue
 * (its only caller in the gateway) retries a failed batch with back-off anyway.
 */
const INSERT_BUSY_TIMEOUT_MS = 50;
const DEFAULT_CACHE_KIB = 32 * 1024;
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/** The writer's upserts touch recent pages only (time-ordered ids, hourly rollups): a small cache serves them. */
const WRITER_CACHE_KIB = 4 * 1024;

/**
 * Whether the file holds Tollgate's tables (a migration ran once), read on a read-only connection: a file that
 * is empty or another program's database is left byte for byte as it was.
 */
export function sqliteFileHasSchema(path: string): boolean {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined
    );
  } finally {
    db.close();
  }
}

export class SqliteUsageStore implements UsageStore {
  readonly dialect = 'sqlite' as const;
  private readonly db: Database.Database;
  /** Read statements return integers as bigint (exact money); the shared decoders convert. */
  private readonly exec: Exec;
  private readonly log?: StorageLogger;
  private writes?: SqliteWrites;
  private readonly busyTimeoutMs: number;
  private readonly writer?: SqliteWriterThread;
  /** Tag set ids of the connection that writes (the writer thread has its own store and cache). */
  private readonly tagSets = new TagSetIds();
  private readonly maintenance = new MaintenanceRuns();

  constructor(
    private readonly path: string,
    opts: SqliteStoreOptions = {},
  ) {
    if (path !== ':memory:' && !opts.mustExist) mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path, { fileMustExist: opts.mustExist === true });
    this.exec = sqliteExec(this.db);
    this.log = opts.logger;
    this.db.pragma('journal_mode = WAL');
    this.busyTimeoutMs = Math.floor(opts.busyTimeoutMs ?? 5000);
    this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    // WAL + NORMAL: a power loss may lose the last commits, never corrupts; fsync per commit would dominate writes.
    this.db.pragma('synchronous = NORMAL');
    // Checkpoint every ~40 MiB of WAL instead of SQLite's 4 MiB: a batch dirties ~1500 pages (rollup rows, tag sets,
    // index entries), so the default copied nearly every batch's pages into the database again at each commit;
    // pages a later batch touches again are copied once.
    this.db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    this.db.pragma('foreign_keys = ON');
    // A negative cache_size is in KiB (SQLite's default is 2 MiB): grouping queries over rollups read many pages.
    this.db.pragma(`cache_size = -${Math.floor(opts.cacheKib ?? DEFAULT_CACHE_KIB)}`);
    if (path !== ':memory:' && opts.writerThread !== false) {
      this.writer = new SqliteWriterThread({ path, busyTimeoutMs: this.busyTimeoutMs, cacheKib: WRITER_CACHE_KIB });
    }
  }

  async migrate(): Promise<MigrateResult> {
    this.db.exec(SCHEMA_MIGRATIONS_DDL.sqlite);
    // IMMEDIATE takes the write lock first, so two processes starting together migrate one after the other.
    const run = this.db.transaction((): { applied: number[]; done: number[] } => {
      const applied = (this.db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]).map(Number);
      const newer = newerVersions(applied);
      if (newer.length)
        this.log?.warn({ versions: newer, known: LATEST_VERSION }, 'database has migrations newer than this build');
      const done: number[] = [];
      for (const m of pendingMigrations(applied)) {
        this.db.exec(m.sqlite);
        this.db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, Date.now());
        done.push(m.version);
      }
      return { applied, done };
    });
    const { applied, done } = run.immediate();
    if (done.length) this.log?.info({ applied: done }, 'storage migrations applied');
    this.writes = undefined; // tables may be new: prepare write statements again
    this.tagSets.clear();
    return { applied: done, version: Math.max(0, ...applied, ...done) };
  }

  /** A write transaction that may find or create tag sets: their ids are cached only if it commits. */
  private withTagSets<T>(write: (found: Map<string, number>) => T): T {
    const found = new Map<string, number>();
    const out = write(found);
    this.tagSets.remember(found);
    return out;
  }

  /** Write statements, prepared once the tables exist (storage/sqlite-writes.ts). */
  private get w(): SqliteWrites {
    return (this.writes ??= prepareWrites(this.db, this.tagSets));
  }

  async insertBatch(records: readonly UsageRecord[]): Promise<InsertResult> {
    if (records.length === 0) return { inserted: 0, duplicates: 0 };
    if (this.writer) return this.writer.insertBatch(records);
    const unique = dedupeById(records);
    const inserted = this.withShortLockWait(() => this.withTagSets((found) => this.w.insert.immediate(unique, found)));
    return { inserted, duplicates: records.length - inserted };
  }

  async quarantine(entries: readonly QuarantinedRecord[]): Promise<void> {
    if (entries.length === 0) return;
    if (this.writer) return this.writer.quarantine(entries);
    this.withShortLockWait(() => this.w.quarantine.immediate(entries));
  }

  /** A write of the write queue: waits at most INSERT_BUSY_TIMEOUT_MS for another connection's lock. */
  private withShortLockWait<T>(write: () => T): T {
    this.db.pragma(`busy_timeout = ${Math.min(INSERT_BUSY_TIMEOUT_MS, this.busyTimeoutMs)}`);
    try {
      return write();
    } finally {
      this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    }
  }

  async countQuarantined(): Promise<number> {
    return Number(this.db.prepare('SELECT count(*) FROM quarantined_records').pluck().get());
  }

  queryUsage(query: UsageQuery): Promise<UsageGroupRow[]> {
    return runUsageQuery(d, this.exec, query);
  }

  listRequests(query: ListRequestsQuery): Promise<RequestPage> {
    return listPage(d, this.exec, query);
  }

  /** A read-only connection of its own to the file; an in-memory database is only reachable through this one. */
  readSource(): ReadSource {
    return this.path === ':memory:'
      ? { kind: 'inline', dialect: d, exec: this.exec }
      : { kind: 'sqlite', path: this.path };
  }

  listTagKeys(): Promise<string[]> {
    return listTagKeys(d, this.exec);
  }

  repriceAll(fn: RepriceFn, filter?: Partial<UsageFilter>): Promise<RepriceResult> {
    return repriceRecords(
      d,
      this.exec,
      async (changes) => this.withTagSets((found) => this.w.reprice.immediate(changes, found)),
      fn,
      filter,
    );
  }

  async insertKey(key: NewGatewayKey): Promise<GatewayKey> {
    return (await this.insertKeys([key]))[0];
  }

  async insertKeys(keys: readonly NewGatewayKey[]): Promise<GatewayKey[]> {
    const now = Date.now();
    const rows = keys.map((k) => checkNewKey(k, now));
    const stmt = this.db.prepare(
      `INSERT INTO keys (${KEY_COLUMNS}, updated_seq) VALUES (${placeholders(7)}, ${NEXT_KEY_SEQ})`,
    );
    this.db.transaction(() => {
      for (const k of rows) stmt.run(keyValues(k));
    })();
    return rows;
  }

  async keyChangesSince(seq: number, limit: number): Promise<KeyChange[]> {
    const rows = this.db.prepare(KEY_CHANGES_SQL(() => '?')).all(seq, limit) as Record<string, unknown>[];
    return rows.map(keyChangeFromRow);
  }

  async listKeys(workspaceId?: string): Promise<GatewayKey[]> {
    const rows =
      workspaceId === undefined
        ? this.db.prepare(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at, id`).all()
        : this.db
            .prepare(`SELECT ${KEY_COLUMNS} FROM keys WHERE workspace_id = ? ORDER BY created_at, id`)
            .all(workspaceId);
    return (rows as Record<string, unknown>[]).map(keyFromRow);
  }

  async findKeyByHash(hash: string): Promise<GatewayKey | undefined> {
    const row = this.db.prepare(`SELECT ${KEY_COLUMNS} FROM keys WHERE hash = ?`).get(hash) as
      Record<string, unknown> | undefined;
    return row && keyFromRow(row);
  }

  async revokeKey(id: string, at = Date.now()): Promise<boolean> {
    return (
      this.db
        .prepare(`UPDATE keys SET revoked_at = ?, updated_seq = ${NEXT_KEY_SEQ} WHERE id = ? AND revoked_at IS NULL`)
        .run(at, id).changes === 1
    );
  }

  async touchKeys(ids: readonly string[], lastUsedAt: number): Promise<void> {
    if (ids.length === 0) return;
    // A write on this thread would wait (blocking the event loop) while the writer thread holds the lock.
    if (this.writer) return this.writer.touchKeys(ids, lastUsedAt);
    const stmt = this.db.prepare(
      'UPDATE keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
    );
    this.db.transaction(() => {
      for (const id of new Set(ids)) stmt.run(lastUsedAt, id, lastUsedAt);
    })();
  }

  /**
   * On the writer thread when there is one (its connection writes; this thread only posts the request). SQLite has
   * no partitions: retention deletes in batches, each DELETE its own short write transaction, so the writer's
   * inserts queued meanwhile go in between two batches.
   */
  maintain(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    if (this.writer) return this.writer.maintain(opts);
    return this.maintenance.track(this.maintainInline(opts));
  }

  private async maintainInline(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    const result: MaintenanceResult = { deleted: 0, deleteStatements: 0, droppedPartitions: [], createdPartitions: [] };
    if (this.maintenance.closing) return { ...result, skipped: 'closing' };
    if (!opts.retention) return result;
    const { before } = opts.retention;
    this.db.prepare(RAISE_MARK_SQL).run(RECORDS_KEPT_FROM, before);
    // Oldest first through the (ts, id, tag_set_id) index, which carries each row's rowid.
    const del = this.db.prepare(
      'DELETE FROM usage_records WHERE rowid IN (SELECT rowid FROM usage_records WHERE ts < ? ORDER BY ts LIMIT ?)',
    );
    const run = await deleteInBatches({
      ...opts.retention,
      stopped: () => this.maintenance.closing,
      deleteBatch: (limit) => del.run(before, limit).changes,
    });
    return {
      ...result,
      deleted: run.deleted,
      deleteStatements: run.statements,
      ...(run.stopped ? { skipped: 'closing' as const } : {}),
    };
  }

  recordsKeptFrom(): Promise<number | null> {
    return readRecordsKeptFrom(d, this.exec);
  }

  /**
   * The database file, its WAL and their folder (where SQLite creates its journal files) must be writable by this
   * process: access(2) answers for permissions, a read-only mount and the immutable flag alike, without a write.
   */
  /** Its writes wait at most INSERT_BUSY_TIMEOUT_MS for the writer thread's lock: they run on the event loop. */
  alertOutbox(): AlertOutbox {
    return new AlertOutbox(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  runtimeBudgets(): RuntimeBudgetTable {
    return new RuntimeBudgetTable(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  spendFreezes(): SpendFreezeTable {
    return new SpendFreezeTable(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  /** The batches created through the gateway (storage/batch-jobs.ts). */
  batchJobs(): BatchJobTable {
    return new BatchJobTable(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  /** Reconciliation runs (storage/reconciliation-runs.ts), on the store's own connection. */
  reconciliationRuns(): ReconciliationRuns {
    return new ReconciliationRuns(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  /** The scheduled reconciliation's claims (storage/reconciliation-schedule.ts), on the store's own connection. */
  reconciliationSchedule(): ReconciliationSchedule {
    return new ReconciliationSchedule(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }
  /** The repricing audit (storage/reprice-log.ts), on the store's own connection. */
  repriceLog(): RepriceLog {
    return new RepriceLog(d, (q) => this.withShortLockWait(() => this.exec(q)));
  }

  async checkWritable(): Promise<void> {
    if (this.path === ':memory:') return;
    await access(this.path, constants.W_OK);
    await access(dirname(this.path), constants.W_OK);
    await access(`${this.path}-wal`, constants.W_OK).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err; // no WAL file between checkpoints is fine
    });
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.maintenance.stop();
    await this.writer?.close();
    try {
      this.db.pragma('optimize'); // refreshes planner statistics where useful (cheap)
    } catch {
      // Only statistics: a full or read-only disk must not stop the shutdown.
    }
    this.db.close();
  }
}
