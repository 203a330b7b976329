import type { BudgetCheck, BudgetStatus, LimitStore, Logger, RecordQueuesService, UsageStoreService } from '../../api';
import { RetryQueue } from './retry-queue';

export type StatusBase = Omit<BudgetStatus, 'spentPico' | 'reservedPico' | 'alerted'>;

/** One budget of one period (and, for per_tag budgets, one tag value) in use: its counters' key and what is known of its spend. */
export interface Applied {
  check: BudgetCheck;
  status: StatusBase;
  /** The usage store's records this budget counts (workspace and tags). */
  filters: Record<string, string>;
  /** Spend recorded before this time is read from the usage store; later spend is counted in the limit store. */
  since: number;
  /** loading: the first read is under way; loaded: the spend before `since` is known; failed: retried in the background. */
  spend: 'loading' | 'loaded' | 'failed';
  /** Settles when the first read ends, either way. */
  firstRead: Promise<void>;
  readEnded?: () => void;
  /** Counted in the limit store while its seed was pending: the seed is added there once read. */
  countedUnseeded: boolean;
  /** Requests admitted and not settled yet. */
  open: number;
  /** When its last request settled (Date.now(); the request's record was queued before). */
  settledAt: number;
  /** With action clamp: the fewest output tokens a clamped request may be left with; undefined: it refuses. */
  clampMin?: number;
  /** When a limit store operation on it last failed: its spend is raised to the usage store's records once the store answers. */
  lostAt?: number;
}

/** Budgets at or beyond the bound looked at for one to forget, from the least recently used. */
const EVICTION_SCAN = 64;

/**
 * The budgets in use, at most `max` (least recently used first), and their spend kept off the request path:
 *
 * - A new budget's spend this period is read from the usage store in the background (RetryQueue: a few reads at
 *   once, retried with backoff while the store fails); a request waits for it at most budgets.spend_read_wait_ms.
 * - A budget whose read failed is never counted from 0 as if it were known: under on_error open its spend is
 *   counted in the limit store from 0, marked unseeded, and the spend read later is added (seedBudget), so the
 *   total is the spend recorded before `since` plus what was counted since.
 * - A limit store operation that failed (Redis down) lost a reservation or a settlement: once the records of
 *   that moment are in the usage store, the spend there is read again and the limit store's raised to it.
 * - Beyond `max`, the least recently used budget that holds nothing only this process knows is forgotten
 *   (LimitStore.forgetBudget): no open request, its spend read (or nothing counted unseeded), nothing lost, and
 *   every record of its settled requests written to the usage store. Its spend is read back when it is next used.
 *   Budgets that cannot be forgotten yet stay beyond the bound until they can.
 */
export class ActiveBudgets {
  private readonly lru = new Map<string, Applied>();
  /** The last entry of `lru` when set by use(): most requests count against the budget the one before did. */
  private newest: Applied | undefined;
  private readonly seeds: RetryQueue<Applied>;
  private readonly raises: RetryQueue<Applied>;
  private lastWarning = 0;
  /** Whether the records' written mark was asked for yet: asking starts its tracking (see WrittenMark). */
  private markWanted = false;

  constructor(
    private readonly max: number,
    private readonly store: LimitStore,
    private readonly usage: Pick<UsageStoreService, 'queryUsage'>,
    private readonly records: Pick<RecordQueuesService, 'writtenBefore'>,
    private readonly log: Logger,
  ) {
    this.seeds = new RetryQueue(
      (a) => this.readSeed(a),
      (a, err) => {
        this.warn(err, 'budget spend read failed: retrying in the background');
        for (const waiting of [a, ...this.seeds.queued()]) failed(waiting);
      },
    );
    this.raises = new RetryQueue(
      (a) => this.raise(a),
      (_a, err) => this.warn(err, 'budget spend not reconciled yet: retrying in the background'),
    );
  }

  get size(): number {
    return this.lru.size;
  }

  /** The budget under `lookup` if it is in use and of the period holding `now`; marks it used. */
  get(lookup: string, now: number): Applied | undefined {
    const hit = this.lru.get(lookup);
    if (!hit || now >= hit.check.periodEndMs || now < hit.status.periodStart) return undefined;
    if (hit !== this.newest) this.use(lookup, hit); // already the most recently used: the order stands
    return hit;
  }

  /** Moves a budget to the most recently used end. */
  private use(lookup: string, a: Applied): void {
    this.lru.delete(lookup);
    this.lru.set(lookup, a);
    this.newest = a;
  }

  /** Starts using a budget (replacing one of a past period) and reads its spend in the background. */
  add(lookup: string, a: Applied): void {
    if (!this.markWanted) {
      // The first budget in use: from now on, forgetting one needs to know which records are written.
      this.markWanted = true;
      this.records.writtenBefore();
    }
    this.use(lookup, a);
    this.seeds.add(a);
    if (this.seeds.pausing) failed(a); // the store failed just now: no request waits for this one
    this.trim();
  }

  /** Waits, at most waitMs, for the first read of those budgets still loading; undefined when none is (no await). */
  ready(applied: readonly Applied[], waitMs: number): Promise<void> | undefined {
    let loading: Applied[] | undefined;
    for (const a of applied) if (a.spend === 'loading') (loading ??= []).push(a);
    return loading && this.firstReads(loading, waitMs);
  }

  private async firstReads(loading: readonly Applied[], waitMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(loading.map((a) => a.firstRead)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))),
    ]);
    clearTimeout(timer);
  }

  /** A limit store operation on these budgets failed: their spend is reconciled from the records in the background. */
  lost(applied: readonly Applied[]): void {
    const now = Date.now();
    for (const a of applied) {
      a.lostAt = now;
      this.raises.add(a);
    }
  }

  stop(): void {
    this.seeds.stop();
    this.raises.stop();
  }

  /** The spend recorded before the budget was first used, read once; added in the limit store if it counted meanwhile. */
  private async readSeed(a: Applied): Promise<void> {
    if (a.spend === 'loaded') return;
    const [total] = await this.usage.queryUsage({
      from: a.status.periodStart,
      to: a.since,
      groupBy: [],
      filters: a.filters,
    });
    const seed = total?.costPico ?? 0n;
    a.check.seedPico = seed;
    a.check.seedPending = false;
    a.spend = 'loaded';
    firstReadEnded(a);
    if (!a.countedUnseeded) return;
    a.countedUnseeded = false;
    await this.store.seedBudget(a.check, seed).catch(() => this.lost([a]));
  }

  /** Raises the limit store's spend to the usage store's, once the records up to the failure are written. */
  private async raise(a: Applied): Promise<void> {
    const lostAt = a.lostAt ?? 0;
    if (this.records.writtenBefore() <= lostAt)
      throw new Error('the records of the failed settlement are not written yet');
    const [total] = await this.usage.queryUsage({
      from: a.status.periodStart,
      to: Math.min(Date.now() + 1, a.check.periodEndMs),
      groupBy: [],
      filters: a.filters,
    });
    await this.store.raiseSpend(a.check, total?.costPico ?? 0n);
    a.countedUnseeded = false; // the records hold the seed too
    if (a.lostAt === lostAt) a.lostAt = undefined;
  }

  /** Forgets least recently used budgets beyond the bound, those that hold nothing only this process knows. */
  private trim(): void {
    if (this.lru.size <= this.max) return;
    const writtenBefore = this.records.writtenBefore();
    let scanned = 0;
    for (const [lookup, a] of this.lru) {
      if (this.lru.size <= this.max || ++scanned > EVICTION_SCAN) return;
      const known = a.spend === 'loaded' || !a.countedUnseeded;
      if (a.open > 0 || a.lostAt !== undefined || !known || a.settledAt >= writtenBefore) continue;
      this.lru.delete(lookup);
      this.seeds.delete(a);
      this.store.forgetBudget(a.check);
    }
  }

  private warn(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.log.warn({ err }, message);
  }
}

function failed(a: Applied): void {
  if (a.spend !== 'loading') return;
  a.spend = 'failed';
  firstReadEnded(a);
}

const ENDED = Promise.resolve();

/** Wakes the requests waiting for the first read, and lets go of what they waited on (kept per budget otherwise). */
function firstReadEnded(a: Applied): void {
  a.readEnded?.();
  a.readEnded = undefined;
  a.firstRead = ENDED;
}
