import type { BudgetConfig } from '../config/limits';
import type { PricedUsage } from '../pricing/cost';
import type { ModelPrice } from '../pricing/model-price';
import type { GatewayContext, Workspace } from '../core/context';
import type { PresentedKey } from './presented-key';
import type { ProviderInstance } from '../core/provider-contract';
import type { PicoUsd, UsageRecord } from '../records/usage-record';
import type { EndpointKey, Usage } from '../core/usage';
import type { BatchJobsService } from '../records/batch-job';

/**
 * The public views of the shared services a plugin may resolve from its container (contracts/tokens.ts). They are
 * deliberately narrower than the classes behind them, so the internals can change without breaking plugins;
 * registerService type-checks that what the runtime registers offers them.
 */

/** TOKENS.Providers: the deployed providers. */
export interface ProviderLookup {
  get(slug: string): ProviderInstance | undefined;
  list(): ProviderInstance[];
  /** The provider the longest matching model-name prefix routes to, if any. */
  byModel(model: string): ProviderInstance | undefined;
}

/** TOKENS.PriceCatalog: the prices in force (bundled catalog plus the deployment's overrides). */
export interface PriceLookup {
  /** The catalog version costs are computed with; a usage record keeps it. */
  readonly version: string;
  lookup(provider: string, model: string): ModelPrice | undefined;
  /** The version a cost priced with `price` records: the catalog's, with a dated price's window. */
  versionOf?(price: ModelPrice): string;
}

/** TOKENS.RequestCost: the request's cost from its usage (computed once per request, shared by every plugin). */
export interface RequestCostService {
  /** Cost in pico-USD (1e-12 USD; format with formatUsd), or null when unknown, with where it came from. */
  of(ctx: GatewayContext): PricedUsage;
  /**
   * What the request would cost with `usage` instead of its own, e.g. its worst case at admission; priced as
   * `as` when given (a budget's stand-in for a model without a price), else as the served or requested model of
   * the request's provider. Not kept.
   */
  price(ctx: GatewayContext, usage: Usage, as?: { provider: string; model: string }): PricedUsage;
  /** What an answer that did not come as a request of its own (a line of a batch's results) costs. */
  priceAnswer(provider: string, model: string, endpoint: EndpointKey, usage: Usage | undefined): PricedUsage;
  /** The prices it computes with. */
  readonly prices: PriceLookup;
}

/** TOKENS.UsageStore: the usage store as plugins use it: recorded spend, and the records they write. */
export interface UsageStoreService {
  /** Totals of the records in [from, to) matching `filters` (dimension or tag -> value), one row per group. */
  queryUsage(query: {
    from: number;
    to: number;
    groupBy: string[];
    filters?: Record<string, string>;
  }): Promise<{ group: Record<string, string | null>; costPico: PicoUsd }[]>;
  /** Stores records (an id already stored is skipped, so a retried batch is safe). */
  insertBatch(records: readonly UsageRecord[]): Promise<{ inserted: number; duplicates: number }>;
  /** The batches created through the gateway, where the store keeps them. */
  batchJobs?(): BatchJobsService;
}

/** How a usage-record queue writes (TOKENS.RecordQueues). */
export interface RecordQueueOptions {
  /** Append-only file for records beyond the memory bound and for what close() could not write. */
  spillPath: string;
  /** Records per write; a batch is also written every flushIntervalMs. */
  batchSize: number;
  flushIntervalMs: number;
  /** Records held in memory while the store is slow or down before they go to the spill file. */
  maxInMemory: number;
}

/**
 * Writes usage records to the usage store off the request path: enqueue() never waits for the store; batches are
 * retried, spilled to a file while the store is down and replayed later; close() drains it.
 */
export interface RecordQueue {
  enqueue(record: UsageRecord): void;
  close(): Promise<void>;
}

/** TOKENS.RecordQueues: opens record queues onto the usage store. */
export interface RecordQueuesService {
  open(options: RecordQueueOptions): RecordQueue;
  /**
   * A time (epoch ms) before which every record enqueued on these queues is in the store (Infinity when none
   * waits): what a later read of the store is sure to find.
   */
  writtenBefore(): number;
}

/** What a valid gateway key grants: its id and workspace. */
export interface KeyGrant {
  keyId: string;
  workspace: Workspace;
}

/** TOKENS.KeyRing: the valid gateway keys (configured and synced), held only as hashes. */
export interface KeyRingService {
  /** What the presented key grants, or undefined when it is not a valid key (constant-time comparison). */
  verify(presented: string): KeyGrant | undefined;
  /** The request's X-Gateway-Key, checked: missing, invalid (with a fingerprint) or valid (with its grant). */
  check(ctx: GatewayContext): PresentedKey;
}

/** The state of one budget in its current period, for the admin API and the alert log. Money in pico-USD. */
export interface BudgetStatus {
  key: string;
  /** The budget's id in the admin API (one per configured budget, shared by its per-value instances). */
  id: string;
  /** yaml: read-only; runtime: managed through POST/PATCH/DELETE /api/budgets. */
  source: 'yaml' | 'runtime';
  workspace: string;
  /** "workspace" or the tag filter, e.g. "customer_id=acme". */
  scope: string;
  period: BudgetConfig['period'];
  periodStart: number;
  periodEnd: number;
  limitPico: bigint;
  spentPico: bigint;
  reservedPico: bigint;
  /** The alert thresholds, shares of the limit, lowest first. */
  alertAt: readonly number[];
  /** True once spent reached the lowest threshold x limit in this period. */
  alerted: boolean;
  /** block: refuses what does not fit; alert: a soft budget that never refuses. */
  action: BudgetConfig['action'];
  /** The usage records it counts: workspace and tag values (usage store filters). */
  filters: Readonly<Record<string, string>>;
}

/** One page of a tag's spend this period (TagSpend): values after `after` in code-point order. */
export interface TagSpendQuery {
  from: number;
  to: number;
  workspace: string;
  tag: string;
  after?: string;
  limit: number;
}

/** Where the budgets' recorded spend is read: the admin API's reader thread, or the usage store itself. */
export interface BudgetReads {
  queryUsage: UsageStoreService['queryUsage'];
  /** [value, spend] of a tag's values in [from, to), a page in code-point order (services/tag-spend-page.ts). */
  tagSpend(q: TagSpendQuery): Promise<[string, bigint][]>;
}

/** Where a page of budgets ends: the budget (workspace and id) and, for a per-tag budget, the last value listed. */
export interface BudgetCursor {
  workspace: string;
  id: string;
  value: string | null;
}

/** Whatever can list the budgets: the budget plugin, reading the limit store (Redis when configured). */
export interface BudgetSource {
  /**
   * The budgets after `after`, at most `limit`, by workspace, budget id and tag value, and the cursor of the next
   * page (null after the last). The work is the page's: per-tag values are paged in the reads and the limit store.
   */
  page(
    now: number,
    reads: BudgetReads | undefined,
    after: BudgetCursor | undefined,
    limit: number,
  ): Promise<{ statuses: BudgetStatus[]; next: BudgetCursor | null }>;
}

/** TOKENS.BudgetLedger: where the admin API reads budgets from; the budget plugin attaches itself to it. */
export interface BudgetLedgerService {
  attach(source: BudgetSource): void;
}

export type { PresentedKey, PricedUsage };
