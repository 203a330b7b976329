/**
 * The storage contract for usage records and gateway keys, implemented by the SQLite and
 * PostgreSQL stores (storage/sqlite-store.ts, storage/postgres-store.ts).
 *
 * Money is bigint pico-USD everywhere (core/usage.ts); counts and token sums are plain numbers.
 * Times are epoch milliseconds; time buckets are UTC hours / UTC days.
 */
import type { CostProvenance, PicoUsd, UsageRecord, UsageSource } from '../records/usage-record';
import type { AlertOutbox } from './alert-outbox';
import type { RuntimeBudgetTable } from './runtime-budget-table';
import type { SpendFreezeTable } from './spend-freeze-table';
import type { BatchJobsService } from '../records/batch-job';
import type { ReconciliationRuns } from './reconciliation-runs';
import type { ReconciliationSchedule } from './reconciliation-schedule';
import type { RepriceLog } from './reprice-log';
import type { QuarantinedRecord } from './quarantine';
import type { ReadSource } from './read-connection';

/** Group value of a record that lacks the grouped tag key, and the filter value matching such records. */
export { UNTAGGED } from '../records/dimensions';
/**
 * Filter value matching a record whose built-in dimension is absent (null workspace, key, model...).
 * In result rows an absent built-in value is `null`.
 */
export const NONE = '(none)';

/** The built-in dimensions and the tag keys they reserve (core/usage.ts: the record's vocabulary). */
export { BUILTIN_DIMENSIONS, SERVED_MODEL_ALIAS, type BuiltinDimension } from '../records/dimensions';

export type Interval = 'hour' | 'day';

/** A time range [from, to) plus dimension filters. */
export interface UsageFilter {
  from: number;
  to: number;
  /** dimension -> value; a tag filter means tags[key] = value, UNTAGGED means "no such tag", NONE a null built-in. */
  filters?: Record<string, string>;
}

export interface UsageQuery extends UsageFilter {
  /** Dimensions to group by, in output order; [] gives one total row. */
  groupBy: string[];
  /** When set, rows are also split by UTC hour/day and carry `bucket`. */
  interval?: Interval;
}

/** Summed counters of a set of records. */
export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  reasoningTokens: number;
  citationTokens: number;
  searchQueries: number;
  /** Sum of known costs; records with a null cost are counted in unknownCostCount instead. */
  costPico: PicoUsd;
  /** Records whose cost is unknown (unpriced; not the audio/image records that are not counted): never shown as $0. */
  unknownCostCount: number;
  /** Records with provenance 'estimated'. */
  estimatedCount: number;
  /** Records with provenance 'partial'. */
  partialCount: number;
  /** Records with an errorCode or an HTTP status >= 400. */
  errorCount: number;
  /** Records whose provider-reported cost and computed cost differ by more than 1%. */
  costDisagreementCount: number;
  /** Audio and image records with nothing to price them by (provenance not_counted): no cost, never shown as $0. */
  notCountedCount: number;
  /**
   * List cost less cost over the records that have a list cost (storage/list-cost.ts): the negotiated discount
   * (pricing.discounts) taken off their list price.
   */
  discountPico: PicoUsd;
  /** Records that have a list cost (every priced record written since migration 022). */
  listCostCount: number;
}

export interface UsageGroupRow extends UsageTotals {
  /** One entry per groupBy name: tag values (UNTAGGED when absent), built-in values (null when absent), status as a string. */
  group: Record<string, string | null>;
  /** Bucket start (epoch ms, UTC) when the query had an interval. */
  bucket?: number;
}

export interface ListRequestsQuery extends UsageFilter {
  /** Page size, default 100, at most 1000. */
  limit?: number;
  /** nextCursor of the previous page. */
  cursor?: string | null;
}

/** Records newest first (ts desc, id desc). */
export interface RequestPage {
  records: UsageRecord[];
  /** Pass back to get the next page; null on the last page. */
  nextCursor: string | null;
}

/** A recomputed cost for a stored record. */
export interface Repricing {
  costPico: PicoUsd | null;
  /** The cost at the list price, before a negotiated discount (UsageRecord.listCostPico). */
  listCostPico?: PicoUsd | null;
  provenance: CostProvenance;
  priceVersion: string | null;
  /** How the record's counts were obtained (inferred for a record written before migration 008). */
  usageSource?: UsageSource | null;
  /** The catalog entry now used. */
  priceId?: string | null;
  /** The provider's figure compared again with the recomputed cost. */
  costDisagrees?: boolean | null;
}

/** Returns the new cost of a record, or undefined to leave it alone. */
export type RepriceFn = (record: UsageRecord) => Repricing | undefined;

export interface RepriceResult {
  /** Records looked at. */
  scanned: number;
  /** Records whose cost, provenance or price version changed. */
  updated: number;
}

export interface InsertResult {
  /** Records newly stored (and added to the rollups). */
  inserted: number;
  /** Records skipped because their id was already stored (a retried batch). */
  duplicates: number;
}

/**
 * One run of the store's background maintenance (storage/maintenance.ts): on PostgreSQL it keeps the month partitions
 * of usage_records ahead of time; with `retention` it also deletes the records older than the cut-off, in batches,
 * and keeps every rollup (storage/retention.ts).
 */
export interface MaintenanceOptions {
  /** The current time (epoch ms): PostgreSQL keeps this month's and the next month's partitions ready. */
  now: number;
  retention?: {
    /** Records with ts before this are deleted (a UTC day start, retentionCutoff). */
    before: number;
    /** Rows one DELETE statement removes at the most. */
    batchSize: number;
    /** Pause between two DELETE statements, ms: inserts get the database in between. */
    pauseMs: number;
  };
}

export interface MaintenanceResult {
  /** Records removed by the batched DELETE statements. */
  deleted: number;
  /** Batched DELETE statements run (each removes at most batchSize rows). */
  deleteStatements: number;
  /** PostgreSQL: month partitions dropped whole (every record in them was older than the cut-off). */
  droppedPartitions: string[];
  /** PostgreSQL: month partitions created ahead of time. */
  createdPartitions: string[];
  /** Why the run did nothing or stopped early: another instance held the maintenance lock, or the store closed. */
  skipped?: 'locked' | 'closing';
}

export interface MigrateResult {
  /** Versions applied by this call (empty when the schema was current). */
  applied: number[];
  /** Schema version after the call. */
  version: number;
}

/** A gateway API key as stored: only the sha256 of the key, never the key itself. */
export interface GatewayKey {
  id: string;
  workspaceId: string;
  label: string;
  /** sha256 of the key, lower-case hex. */
  hash: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export type { KeyChange } from './keys';
import type { KeyChange } from './keys';

export interface NewGatewayKey {
  id: string;
  workspaceId: string;
  label?: string;
  hash: string;
  /** Defaults to now. */
  createdAt?: number;
}

export interface UsageStore {
  readonly dialect: 'sqlite' | 'postgres';
  /** Applies pending schema migrations in order; safe to call on every start and concurrently. */
  migrate(): Promise<MigrateResult>;
  /**
   * Stores records in one transaction with their tags and rollup increments.
   * Idempotent on record id: already stored ids are skipped and add nothing to the rollups.
   */
  insertBatch(records: readonly UsageRecord[]): Promise<InsertResult>;
  /**
   * Keeps records refused for their content in quarantined_records (storage/quarantine.ts), in one transaction;
   * an entry whose digest is already there is skipped.
   */
  quarantine(entries: readonly QuarantinedRecord[]): Promise<void>;
  /** Rows in quarantined_records (every instance's, on a shared PostgreSQL). */
  countQuarantined(): Promise<number>;
  /** Grouped totals (and time series when `interval` is set); see storage/query/plan.ts for the paths. */
  queryUsage(query: UsageQuery): Promise<UsageGroupRow[]>;
  /** Raw records, newest first, keyset-paged. */
  listRequests(query: ListRequestsQuery): Promise<RequestPage>;
  /** Every tag key that appears in the data, sorted (read cheaply from the tag rollup). */
  listTagKeys(): Promise<string[]>;
  /** Where a connection of its own reads this store's data: the admin API's reads (admin/reads/) run there. */
  readSource(): ReadSource;
  /** Recomputes stored costs (e.g. after a price was added) and corrects the rollups by the difference. */
  repriceAll(fn: RepriceFn, filter?: Partial<UsageFilter>): Promise<RepriceResult>;

  insertKey(key: NewGatewayKey): Promise<GatewayKey>;
  /** Inserts every key in one transaction (all or none), each with the next change sequence. */
  insertKeys(keys: readonly NewGatewayKey[]): Promise<GatewayKey[]>;
  /** Keys created or revoked after change `seq` (keys.updated_seq), in change order, at most `limit` of them. */
  keyChangesSince(seq: number, limit: number): Promise<KeyChange[]>;
  listKeys(workspaceId?: string): Promise<GatewayKey[]>;
  findKeyByHash(hash: string): Promise<GatewayKey | undefined>;
  /** Marks a key revoked; false when no such key or already revoked. */
  revokeKey(id: string, at?: number): Promise<boolean>;
  /** Batched last-used update; never moves last_used_at backwards. */
  touchKeys(ids: readonly string[], lastUsedAt: number): Promise<void>;

  /**
   * Background maintenance (storage/maintenance.ts runs it at start and every hour), on the store's own connection:
   * the SQLite writer thread, a PostgreSQL pool client. Never on a request's path.
   */
  maintain(opts: MaintenanceOptions): Promise<MaintenanceResult>;
  /**
   * The retention's cut-off: records before it were deleted (the rollups keep their totals); null while none were.
   * listRequests has nothing before it, and queryUsage leaves out the parts of a range that it could only read from
   * records there (storage/query/coverage.ts says which).
   */
  recordsKeptFrom(): Promise<number | null>;
  /**
   * Rejects when the store could not take a write now (readiness, GET /readyz). Cheap, and writes nothing: SQLite
   * checks that its files and folder are writable, PostgreSQL that the server answers and is not read-only.
   */
  checkWritable(): Promise<void>;
  /** The alert outbox (storage/alert-outbox.ts), on the store's own connection. */
  alertOutbox?(): AlertOutbox;
  /** The budgets managed through the admin API (migration 013). */
  runtimeBudgets?(): RuntimeBudgetTable;
  /** Scopes refused after a spend anomaly (migration 013), until lifted or expired. */
  spendFreezes?(): SpendFreezeTable;
  /** Reconciliation runs (storage/reconciliation-runs.ts), on the store's own connection. */
  reconciliationRuns?(): ReconciliationRuns;
  /** The batches created through the gateway (migration 016). */
  batchJobs?(): BatchJobsService;
  /** The scheduled reconciliation's claims (storage/reconciliation-schedule.ts). */
  reconciliationSchedule?(): ReconciliationSchedule;
  /** The repricing audit (storage/reprice-log.ts). */
  repriceLog?(): RepriceLog;

  close(): Promise<void>;
}

/** The pino-like logger the storage layer accepts (a pino Logger fits); always called as (fields, message). */
export interface StorageLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
