import type { LimitStoreConfig, RateLimits, WorkspaceLimits } from '../config/limits';
import type { GatewayContext } from '../core/context';

/**
 * TOKENS.LimitStore: shared counters behind every limit, in memory for one instance, or in Redis so that all
 * instances behind a load balancer enforce one limit, not one each (services/limit-store/). Every operation is
 * atomic per call: a check and its update happen together (a Lua script in Redis).
 */

/** A token bucket: `limit` tokens, refilled continuously at `limit` per `windowMs` (so 60/min allows a burst of 60). */
export interface Bucket {
  key: string;
  limit: number;
  windowMs: number;
}

export interface BucketState {
  key: string;
  limit: number;
  /** Whole tokens left after this call. */
  remaining: number;
  /** Milliseconds until the bucket is full again (x-ratelimit-reset). */
  resetMs: number;
  /** Milliseconds until one token is available (Retry-After); 0 when allowed. */
  retryAfterMs: number;
}

export interface TakeResult {
  /** True when every bucket had a token; then one was taken from each. Otherwise none was taken. */
  allowed: boolean;
  buckets: BucketState[];
}

export interface BudgetCheck {
  /** The budget's identity, e.g. "ws:default:all:day:<period start>"; the store adds the period end. */
  key: string;
  /** Spend limit for the period, pico-USD. */
  limitPico: bigint;
  /** When the period ends (epoch ms); counters expire after it. */
  periodEndMs: number;
  /** Spend already recorded before this process knew about it (seeded from the usage store). */
  seedPico: bigint;
  /**
   * True while that spend is not known yet (its read failed or is late, and on_error is open): a budget the store
   * creates now starts at 0 and is marked, and seedBudget adds the spend once it is read.
   */
  seedPending?: boolean;
}

/** One budget's counters (pico-USD): settled spend and the live reservations of open requests. */
export interface BudgetState {
  key: string;
  spentPico: bigint;
  reservedPico: bigint;
  limitPico: bigint;
}

export interface BudgetReservation {
  allowed: boolean;
  /** Per budget, in the order of the checks. */
  states: BudgetState[];
}

/**
 * The operations a request runs, answered at once by a store held in this process's memory (MemoryLimitStore):
 * the limit plugins call these when the store has them, so that an admission costs no promise and no turn of the
 * microtask queue. Same meaning as LimitStore's operations of the same name.
 */
export interface ImmediateLimitOps {
  take(buckets: readonly Bucket[], now?: number): TakeResult;
  windowTotal(key: string, windowMs: number, now?: number): number;
  addToWindow(key: string, windowMs: number, amount: number, now?: number): number;
  reserve(checks: readonly BudgetCheck[], holder: string, amountPico: bigint, leaseMs: number): BudgetReservation;
  settle(checks: readonly BudgetCheck[], holder: string, actualPico: bigint): BudgetState[];
  acquireSlot(key: string, holder: string, limit: number, leaseMs: number): { acquired: boolean; inUse: number };
  releaseSlot(key: string, holder: string): void;
}

export interface LimitStore {
  /** Set by a store in this process's memory: the request's operations without a promise. */
  readonly immediate?: ImmediateLimitOps;
  /** Takes one token from each bucket, all or nothing. */
  take(buckets: readonly Bucket[], now?: number): Promise<TakeResult>;
  /** Gives one token back to each bucket (never above its limit): for a taken request that a later limit refused. */
  refund(buckets: readonly Bucket[], now?: number): Promise<void>;

  /** Amount added to a fixed window (e.g. tokens this minute), and the running total. */
  addToWindow(key: string, windowMs: number, amount: number, now?: number): Promise<number>;
  /** Current total of the window holding `now`. */
  windowTotal(key: string, windowMs: number, now?: number): Promise<number>;

  /**
   * Holds one of at most `limit` slots under `key` for `holder` (e.g. an open stream). Slots expire after
   * `leaseMs` unless renewed, so a crashed instance cannot leak them forever.
   */
  acquireSlot(
    key: string,
    holder: string,
    limit: number,
    leaseMs: number,
    now?: number,
  ): Promise<{ acquired: boolean; inUse: number }>;
  renewSlot(key: string, holder: string, leaseMs: number, now?: number): Promise<void>;
  releaseSlot(key: string, holder: string): Promise<void>;

  /**
   * Reserves `amountPico` for `holder` (a request id) on every budget, all or nothing, when spent + reserved +
   * amount <= limit for each. The reservation is a lease: unless renewed or settled it lapses after `leaseMs`,
   * so one whose settlement never comes (a dead instance, a reply lost to a time-out) frees itself.
   */
  reserve(
    checks: readonly BudgetCheck[],
    holder: string,
    amountPico: bigint,
    leaseMs: number,
  ): Promise<BudgetReservation>;
  /** Extends the holder's live reservations by `leaseMs` from now; a lapsed one stays lapsed. */
  renewReservation(checks: readonly BudgetCheck[], holder: string, leaseMs: number): Promise<void>;
  /**
   * Ends the request: drops the holder's reservation if it still holds one (so a repeated call releases nothing
   * more) and adds the real cost `actualPico` to spent. Returns the states after.
   */
  settle(checks: readonly BudgetCheck[], holder: string, actualPico: bigint): Promise<BudgetState[]>;
  /** The budgets' counters now, reserving nothing; a budget not yet in the store reports its seed. */
  budgetStates(checks: readonly BudgetCheck[]): Promise<BudgetState[]>;
  /**
   * Adds `seedPico` to the spent of a budget the store created while its seed was pending, once (the mark is
   * cleared); a budget created with its seed, or not created yet, is left alone.
   */
  seedBudget(check: BudgetCheck, seedPico: bigint): Promise<void>;
  /**
   * Raises spent to at least `spentPico`, creating the budget with it if missing; never lowers it. Puts back
   * spend whose settlement an outage of the store lost, read from the usage store's records.
   */
  raiseSpend(check: BudgetCheck, spentPico: bigint): Promise<BudgetState>;
  /**
   * Drops the budget's counters when the store keeps them in this process and no reservation is open (the
   * budget plugin forgets idle budgets; their spend is read back from the usage store when next used). A shared
   * store keeps them: they expire with the period.
   */
  forgetBudget(check: BudgetCheck): void;

  /** Adds `member` to the set `key`, kept until `untilMs` (e.g. the tag values a per-tag budget met this period). */
  addToSet(key: string, member: string, untilMs: number): Promise<void>;
  /** The members after `after` (from the first when undefined) in code-point order, at most `limit`. */
  setRange(key: string, after: string | undefined, limit: number): Promise<string[]>;

  close(): Promise<void>;
}

/** One thing a limit applies to: the whole workspace, or one value of a tag within it. */
export interface LimitScope {
  /** Stable key fragment, e.g. "ws:default" or "ws:default:tag:customer_id=acme". */
  key: string;
  /** Human-readable, for error messages: "workspace default" or "customer_id=acme". */
  label: string;
  limits: RateLimits;
}

/** Keeps the leases of open requests renewed (stream slots, budget reservations) until remove(holder). */
export interface LeaseRenewer<T> {
  readonly leaseMs: number;
  add(holder: string, held: T): void;
  remove(holder: string): void;
}

/**
 * TOKENS.WorkspaceLimits: what every limit plugin needs, in one place: the workspaces' limits, the shared counters
 * (TOKENS.LimitStore), and the policy when the store cannot be reached.
 */
export interface WorkspaceLimitsService {
  readonly byWorkspace: ReadonlyMap<string, WorkspaceLimits>;
  readonly store: LimitStore;
  readonly storeConfig: LimitStoreConfig;
  /** The limits of the request's workspace (undefined before auth, or for a workspace without limits). */
  limitsOf(ctx: GatewayContext): WorkspaceLimits | undefined;
  /** The scopes a request falls under; the same array for the same workspace and tag values. */
  scopesOf(ctx: GatewayContext, limits: WorkspaceLimits): readonly LimitScope[];
  /** Runs a store operation under limit_store.on_error: `whenOpen` when failing open, 503 limits_unavailable when closed. */
  guard<T>(what: string, op: () => Promise<T>, whenOpen: T): Promise<T>;
  /** guard() for an operation answered at once (LimitStore.immediate): the same policy, without a promise. */
  guardNow<T>(what: string, op: () => T, whenOpen: T): T;
  /** A renewer of leases held by open requests, renewed with `renew`. */
  leases<T>(leaseMs: number, renew: (holder: string, held: T) => Promise<unknown>): LeaseRenewer<T>;
  /** Key fragment for a tag value (tag values may hold any character). */
  tagScope(key: string, value: string): string;
}
