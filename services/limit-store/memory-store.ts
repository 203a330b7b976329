import type {
  Bucket,
  BucketState,
  BudgetCheck,
  BudgetReservation,
  BudgetState,
  ImmediateLimitOps,
  LimitStore,
  TakeResult,
} from '../../contracts/limit-store';
import { SortedMembers } from './sorted-members';

interface BucketRecord {
  tokens: number;
  updatedMs: number;
  /** When the bucket is full again: from then on it carries no information and can be dropped. */
  fullAtMs: number;
}

/**
 * Holds with a lease, by holder (request id). Every open request holds one, so lapsed ones (their holder crashed
 * or hung) are looked for only once `nextLapse`, a lower bound of the earliest lease end, has passed: renewals
 * only move lease ends later. Checking every lease on every acquire would make each admission O(open streams).
 */
interface Leases<H extends { leaseEnd: number }> {
  holds: Map<string, H>;
  nextLapse: number;
}

interface BudgetRecord extends Leases<{ amount: bigint; leaseEnd: number }> {
  spent: bigint;
  /** Sum of the live reservations' amounts. */
  reserved: bigint;
  periodEndMs: number;
  /** Created while its seed was pending: seedBudget adds it. */
  unseeded: boolean;
}

/** The open stream slots of one key. */
type SlotRecord = Leases<{ leaseEnd: number }>;

/**
 * Limits for a single instance, in process memory. Node runs one request handler at a time, so each method
 * is atomic. Idle entries are swept so memory stays bounded by the number of active keys.
 */
export class MemoryLimitStore implements LimitStore {
  private readonly buckets = new Map<string, BucketRecord>();
  private readonly windows = new Map<string, { start: number; total: number }>();
  private readonly slots = new Map<string, SlotRecord>();
  private readonly budgets = new Map<string, BudgetRecord>();
  private readonly sets = new Map<string, { members: SortedMembers; untilMs: number }>();
  private readonly sweeper: NodeJS.Timeout;
  /** A request's operations answered at once (no promise): the limit plugins use them when a store has them. */
  readonly immediate: ImmediateLimitOps = {
    take: (buckets, now = Date.now()) => this.takeNow(buckets, now),
    windowTotal: (key, windowMs, now = Date.now()) => this.window(key, windowMs, now).total,
    addToWindow: (key, windowMs, amount, now = Date.now()) => (this.window(key, windowMs, now).total += amount),
    reserve: (checks, holder, amountPico, leaseMs) => this.reserveNow(checks, holder, amountPico, leaseMs),
    settle: (checks, holder, actualPico) => this.settleNow(checks, holder, actualPico),
    acquireSlot: (key, holder, limit, leaseMs) => this.acquireSlotNow(key, holder, limit, leaseMs, Date.now()),
    releaseSlot: (key, holder) => this.releaseSlotNow(key, holder),
  };

  constructor(sweepEveryMs = 60_000) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepEveryMs).unref();
  }

  async take(buckets: readonly Bucket[], now?: number): Promise<TakeResult> {
    return this.immediate.take(buckets, now);
  }

  private takeNow(buckets: readonly Bucket[], now: number): TakeResult {
    const tokens: number[] = new Array(buckets.length);
    let allowed = true;
    for (let i = 0; i < buckets.length; i++) {
      const b = buckets[i];
      const rec = this.buckets.get(b.key);
      tokens[i] = rec ? Math.min(b.limit, rec.tokens + (now - rec.updatedMs) * (b.limit / b.windowMs)) : b.limit;
      if (tokens[i] < 1) allowed = false;
    }
    const states: BucketState[] = new Array(buckets.length);
    for (let i = 0; i < buckets.length; i++) {
      const b = buckets[i];
      const rate = b.limit / b.windowMs;
      const left = allowed ? tokens[i] - 1 : tokens[i];
      if (allowed) {
        const rec = this.buckets.get(b.key);
        const fullAtMs = now + (b.limit - left) / rate;
        if (rec) {
          rec.tokens = left;
          rec.updatedMs = now;
          rec.fullAtMs = fullAtMs;
        } else {
          this.buckets.set(b.key, { tokens: left, updatedMs: now, fullAtMs });
        }
      }
      states[i] = {
        key: b.key,
        limit: b.limit,
        remaining: Math.max(0, Math.floor(left)),
        resetMs: Math.ceil((b.limit - left) / rate),
        retryAfterMs: left >= 1 || allowed ? 0 : Math.ceil((1 - left) / rate),
      };
    }
    return { allowed, buckets: states };
  }

  async refund(buckets: readonly Bucket[], now = Date.now()): Promise<void> {
    for (const b of buckets) {
      const rec = this.buckets.get(b.key);
      if (!rec) continue; // missing means full
      const rate = b.limit / b.windowMs;
      const tokens = Math.min(b.limit, rec.tokens + (now - rec.updatedMs) * rate + 1);
      this.buckets.set(b.key, { tokens, updatedMs: now, fullAtMs: now + (b.limit - tokens) / rate });
    }
  }

  async addToWindow(key: string, windowMs: number, amount: number, now?: number): Promise<number> {
    return this.immediate.addToWindow(key, windowMs, amount, now);
  }

  async windowTotal(key: string, windowMs: number, now?: number): Promise<number> {
    return this.immediate.windowTotal(key, windowMs, now);
  }

  async acquireSlot(
    key: string,
    holder: string,
    limit: number,
    leaseMs: number,
    now = Date.now(),
  ): Promise<{ acquired: boolean; inUse: number }> {
    return this.acquireSlotNow(key, holder, limit, leaseMs, now);
  }

  private acquireSlotNow(
    key: string,
    holder: string,
    limit: number,
    leaseMs: number,
    now: number,
  ): { acquired: boolean; inUse: number } {
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { holds: new Map(), nextLapse: Infinity }));
    dropLapsed(slot, now, dropSlot);
    const held = slot.holds;
    if (held.size >= limit && !held.has(holder)) return { acquired: false, inUse: held.size };
    held.set(holder, { leaseEnd: now + leaseMs });
    if (now + leaseMs < slot.nextLapse) slot.nextLapse = now + leaseMs;
    return { acquired: true, inUse: held.size };
  }

  async renewSlot(key: string, holder: string, leaseMs: number, now = Date.now()): Promise<void> {
    const hold = this.slots.get(key)?.holds.get(holder);
    if (hold) hold.leaseEnd = now + leaseMs;
  }

  async releaseSlot(key: string, holder: string): Promise<void> {
    this.releaseSlotNow(key, holder);
  }

  private releaseSlotNow(key: string, holder: string): void {
    const slot = this.slots.get(key);
    slot?.holds.delete(holder);
    if (slot?.holds.size === 0) this.slots.delete(key);
  }

  async reserve(
    checks: readonly BudgetCheck[],
    holder: string,
    amountPico: bigint,
    leaseMs: number,
  ): Promise<BudgetReservation> {
    return this.immediate.reserve(checks, holder, amountPico, leaseMs);
  }

  private reserveNow(
    checks: readonly BudgetCheck[],
    holder: string,
    amountPico: bigint,
    leaseMs: number,
  ): BudgetReservation {
    const now = Date.now();
    const recs = checks.map((c) => this.budget(c, now));
    const allowed = checks.every((c, i) => recs[i].spent + recs[i].reserved + amountPico <= c.limitPico);
    if (allowed && amountPico > 0n) {
      for (const r of recs) {
        release(r, holder);
        r.holds.set(holder, { amount: amountPico, leaseEnd: now + leaseMs });
        r.reserved += amountPico;
        if (now + leaseMs < r.nextLapse) r.nextLapse = now + leaseMs;
      }
    }
    return { allowed, states: checks.map((c, i) => state(c, recs[i])) };
  }

  async renewReservation(checks: readonly BudgetCheck[], holder: string, leaseMs: number): Promise<void> {
    const now = Date.now();
    for (const c of checks) {
      const hold = this.budgets.get(budgetId(c))?.holds.get(holder);
      if (hold) hold.leaseEnd = now + leaseMs;
    }
  }

  async settle(checks: readonly BudgetCheck[], holder: string, actualPico: bigint): Promise<BudgetState[]> {
    return this.immediate.settle(checks, holder, actualPico);
  }

  private settleNow(checks: readonly BudgetCheck[], holder: string, actualPico: bigint): BudgetState[] {
    const now = Date.now();
    return checks.map((c) => {
      const r = this.budget(c, now);
      release(r, holder);
      r.spent += actualPico;
      return state(c, r);
    });
  }

  async budgetStates(checks: readonly BudgetCheck[]): Promise<BudgetState[]> {
    const now = Date.now();
    return checks.map((c) => {
      const r = this.budgets.get(budgetId(c));
      if (!r) return { key: c.key, spentPico: c.seedPico, reservedPico: 0n, limitPico: c.limitPico };
      dropLapsed(r, now, release);
      return state(c, r);
    });
  }

  async seedBudget(check: BudgetCheck, seedPico: bigint): Promise<void> {
    const r = this.budgets.get(budgetId(check));
    if (!r?.unseeded) return;
    r.unseeded = false;
    r.spent += seedPico;
  }

  async raiseSpend(check: BudgetCheck, spentPico: bigint): Promise<BudgetState> {
    const r = this.budget(check, Date.now());
    if (r.spent < spentPico) r.spent = spentPico;
    r.unseeded = false; // the records read hold the seed too
    return state(check, r);
  }

  forgetBudget(check: BudgetCheck): void {
    const id = budgetId(check);
    const r = this.budgets.get(id);
    if (r && r.holds.size === 0) this.budgets.delete(id);
  }

  /** Budgets held in memory (their count is bounded by the budget plugin's active budgets). */
  get budgetCount(): number {
    return this.budgets.size;
  }

  async addToSet(key: string, member: string, untilMs: number): Promise<void> {
    let set = this.sets.get(key);
    if (!set) this.sets.set(key, (set = { members: new SortedMembers(), untilMs }));
    set.members.add(member);
    set.untilMs = Math.max(set.untilMs, untilMs);
  }

  async setRange(key: string, after: string | undefined, limit: number): Promise<string[]> {
    return this.sets.get(key)?.members.range(after, limit) ?? [];
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private window(key: string, windowMs: number, now: number) {
    const start = now - (now % windowMs);
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      w = { start, total: 0 };
      this.windows.set(key, w);
    }
    return w;
  }

  private budget(c: BudgetCheck, now: number): BudgetRecord {
    const id = budgetId(c);
    let r = this.budgets.get(id);
    if (!r) {
      const unseeded = c.seedPending === true;
      const spent = unseeded ? 0n : c.seedPico;
      r = { spent, reserved: 0n, holds: new Map(), periodEndMs: c.periodEndMs, nextLapse: Infinity, unseeded };
      this.budgets.set(id, r);
    }
    dropLapsed(r, now, release);
    return r;
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start > 24 * 3600_000) this.windows.delete(k);
    for (const [k, r] of this.budgets) if (r.periodEndMs < now) this.budgets.delete(k);
    for (const [k, s] of this.sets) if (s.untilMs < now) this.sets.delete(k);
    for (const [k, b] of this.buckets) if (b.fullAtMs <= now) this.buckets.delete(k);
    for (const [k, slot] of this.slots) {
      dropLapsed(slot, now, dropSlot);
      if (slot.holds.size === 0) this.slots.delete(k);
    }
  }
}

/**
 * One record per budget and period: a request admitted before a period ended settles after it with the old
 * period, and that must not reset the new period's spend and open reservations.
 */
function budgetId(c: BudgetCheck): string {
  return `${c.key}\u0000${c.periodEndMs}`;
}

function state(c: BudgetCheck, r: BudgetRecord): BudgetState {
  return { key: c.key, spentPico: r.spent, reservedPico: r.reserved, limitPico: c.limitPico };
}

function dropSlot(slot: SlotRecord, holder: string): void {
  slot.holds.delete(holder);
}

function release(r: BudgetRecord, holder: string): void {
  const hold = r.holds.get(holder);
  if (!hold) return;
  r.holds.delete(holder);
  r.reserved -= hold.amount;
}

/**
 * Drops the holds whose lease ended (same rule as the Redis store: a budget's settlement, a stream's release, is
 * never coming), once the earliest may have.
 */
function dropLapsed<R extends Leases<{ leaseEnd: number }>>(
  r: R,
  now: number,
  drop: (r: R, holder: string) => void,
): void {
  if (now < r.nextLapse) return;
  let next = Infinity;
  for (const [holder, hold] of r.holds) {
    if (hold.leaseEnd <= now) drop(r, holder);
    else if (hold.leaseEnd < next) next = hold.leaseEnd;
  }
  r.nextLapse = next;
}
