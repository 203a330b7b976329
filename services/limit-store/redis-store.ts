import type { Redis } from 'ioredis';
import { createRedis, isReplyError, replyError } from '../redis-client';
import { CircuitBreaker } from './circuit-breaker';
import type {
  Bucket,
  BudgetCheck,
  BudgetReservation,
  BudgetState,
  LimitStore,
  TakeResult,
} from '../../contracts/limit-store';
import { LIMIT_BATCH, type LimitOp } from './redis-scripts';
import { bucketState, budgetStates, period, pico, seed, time } from './redis-args';

export { BUDGET_MAX_PICO } from './redis-args';

export interface RedisLimitStoreOptions {
  /** Prepended to every key (default `tollgate:`); a unique prefix isolates tests or tenants. */
  keyPrefix?: string;
  /** Upper bound on one command, and on waiting for a connection attempt under way, before rejecting. Default 500 ms. */
  commandTimeoutMs?: number;
  /** After a time-out or connection failure, operations reject at once for this long (then a ping probes). Default 1000 ms. */
  circuitBreakerMs?: number;
  /** Connection errors (the store keeps reconnecting in the background; operations reject meanwhile). */
  onError?: (err: Error) => void;
}

/** The batch script, as ioredis adds it to the client by defineCommand: one [ok, result or error text] per operation. */
interface LimitCommands {
  tgLimitBatch(numKeys: number, ...keysThenArgs: string[]): Promise<[number, unknown][]>;
}

/** An operation waiting for the next batch. */
interface QueuedOp {
  op: LimitOp;
  keys: string[];
  args: string[];
  resolve(result: unknown): void;
  reject(err: Error): void;
}

/**
 * Most operations one batch carries; the rest go in the next one. Redis runs a script to its end before serving
 * anyone else, so a batch is kept to about a millisecond of Lua.
 */
const MAX_BATCH = 128;

/**
 * Limits shared by every instance through one Redis server (not Redis Cluster: multi-key scripts would need
 * all keys in one hash slot). Every operation is a Lua function, so a check and its update are atomic across
 * processes. The operations issued in one event-loop turn (under load, those of many requests) leave as one call
 * of one script that runs them in order (redis-scripts.ts): one command, one timer and one socket write on this
 * side, one script run on the server, where five script calls a request made the gateway's CPU per request 1.4-2.1x.
 *
 * Time: when `now` is passed it is used as is (deterministic tests, single caller clock); when omitted the
 * scripts read Redis `TIME`, so instances with drifting clocks still share one clock. Use one or the other
 * for a given key, not both. Budgets take no `now`; their expiry runs on the Redis clock.
 *
 * Failure: no offline queue and a short command timeout, so an operation REJECTS instead of hanging the
 * request: at once while Redis refuses connections (the client reconnects in the background), after
 * `commandTimeoutMs` when Redis hangs. A time-out or connection failure also opens a circuit breaker: for
 * `circuitBreakerMs` every operation rejects at once (a request runs several, which would otherwise each wait
 * out the time-out), until a background ping finds Redis answering again. The caller chooses fail-open or
 * fail-closed.
 *
 * Keys (under the prefix): `bucket:<key>` hash {tokens, ts}; `window:<key>` hash {<window start>: total};
 * `slots:<key>` sorted set holder -> lease end; `budget:<key>:<periodEndMs>` hash {spent, reserved,
 * r:<holder> = amount} with `budget:<key>:<periodEndMs>:leases` sorted set holder -> lease end; `set:<key>` set.
 */
export class RedisLimitStore implements LimitStore {
  readonly keyPrefix: string;
  private readonly redis: Redis & LimitCommands;
  private readonly timeoutMs: number;
  private readyWaiter: Promise<void> | undefined;
  private readonly breaker: CircuitBreaker;
  private closed = false;
  private readonly queued: QueuedOp[] = [];
  private flushScheduled = false;

  constructor(url: string, opts: RedisLimitStoreOptions = {}) {
    this.keyPrefix = opts.keyPrefix ?? 'tollgate:';
    this.timeoutMs = opts.commandTimeoutMs ?? 500;
    const redis = createRedis(url, {
      enableOfflineQueue: false,
      commandTimeout: this.timeoutMs,
      connectTimeout: Math.max(this.timeoutMs, 1000),
      // A command cut off by a lost connection fails at once and is never re-sent after the reconnect: its caller
      // already went on (fail open or closed), so a replay would count a request twice.
      maxRetriesPerRequest: 0,
      // Keep trying in the background, at most every 2 s, so the store heals when Redis comes back.
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    // Without a listener ioredis logs every failed reconnect to the console.
    redis.on('error', (err: Error) => opts.onError?.(err));
    redis.defineCommand('tgLimitBatch', { lua: LIMIT_BATCH });
    this.redis = redis as Redis & LimitCommands;
    this.breaker = new CircuitBreaker(opts.circuitBreakerMs ?? 1000, async () => {
      await this.ready();
      await this.redis.ping();
    });
  }

  /** True while the connection is up and ready for commands (and the circuit breaker closed). */
  get connected(): boolean {
    return !this.closed && this.redis.status === 'ready' && !this.breaker.open;
  }

  /** Round trip to Redis in ms; rejects like any operation when Redis is unreachable. */
  async ping(): Promise<number> {
    return this.run(async () => {
      const t0 = performance.now();
      await this.redis.ping();
      return performance.now() - t0;
    });
  }

  async take(buckets: readonly Bucket[], now?: number): Promise<TakeResult> {
    if (buckets.length === 0) return { allowed: true, buckets: [] };
    const [keys, args] = this.bucketArgs(buckets, now);
    const [allowed, ...left] = (await this.op('take', keys, args)) as [number, ...string[]];
    const ok = allowed === 1;
    return { allowed: ok, buckets: buckets.map((b, i) => bucketState(b, Number(left[i]), ok)) };
  }

  async refund(buckets: readonly Bucket[], now?: number): Promise<void> {
    if (buckets.length === 0) return;
    const [keys, args] = this.bucketArgs(buckets, now);
    await this.op('refund', keys, args);
  }

  async addToWindow(key: string, windowMs: number, amount: number, now?: number): Promise<number> {
    const t = time(now);
    return Number(await this.op('windowAdd', [this.key('window', key)], [t, String(windowMs), String(amount)]));
  }

  async windowTotal(key: string, windowMs: number, now?: number): Promise<number> {
    const t = time(now);
    return Number(await this.op('windowTotal', [this.key('window', key)], [t, String(windowMs)]));
  }

  async acquireSlot(
    key: string,
    holder: string,
    limit: number,
    leaseMs: number,
    now?: number,
  ): Promise<{ acquired: boolean; inUse: number }> {
    const t = time(now);
    const [acquired, inUse] = (await this.op(
      'slotAcquire',
      [this.key('slots', key)],
      [holder, String(limit), String(leaseMs), t],
    )) as [number, number];
    return { acquired: acquired === 1, inUse };
  }

  async renewSlot(key: string, holder: string, leaseMs: number, now?: number): Promise<void> {
    const t = time(now);
    await this.op('slotRenew', [this.key('slots', key)], [holder, String(leaseMs), t]);
  }

  async releaseSlot(key: string, holder: string): Promise<void> {
    await this.op('slotRelease', [this.key('slots', key)], [holder]);
  }

  async reserve(
    checks: readonly BudgetCheck[],
    holder: string,
    amountPico: bigint,
    leaseMs: number,
  ): Promise<BudgetReservation> {
    if (checks.length === 0) return { allowed: true, states: [] };
    const args = [holder, pico(amountPico, 'amountPico'), String(leaseMs)];
    for (const c of checks) args.push(pico(c.limitPico, 'limitPico'), seed(c), period(c.periodEndMs));
    const keys = this.budgetKeys(checks);
    const [allowed, ...counters] = (await this.op('budgetReserve', keys, args)) as [number, ...string[]];
    return { allowed: allowed === 1, states: budgetStates(checks, counters) };
  }

  async renewReservation(checks: readonly BudgetCheck[], holder: string, leaseMs: number): Promise<void> {
    if (checks.length === 0) return;
    const leases = checks.map((c) => `${this.budgetKey(c)}:leases`);
    await this.op('budgetRenew', leases, [holder, String(leaseMs)]);
  }

  async settle(checks: readonly BudgetCheck[], holder: string, actualPico: bigint): Promise<BudgetState[]> {
    if (checks.length === 0) return [];
    const args = [holder, pico(actualPico, 'actualPico')];
    for (const c of checks) args.push(seed(c), period(c.periodEndMs));
    const keys = this.budgetKeys(checks);
    return budgetStates(checks, (await this.op('budgetSettle', keys, args)) as string[]);
  }

  async budgetStates(checks: readonly BudgetCheck[]): Promise<BudgetState[]> {
    if (checks.length === 0) return [];
    const args = checks.flatMap((c) => [pico(c.seedPico, 'seedPico'), period(c.periodEndMs)]);
    const keys = this.budgetKeys(checks);
    return budgetStates(checks, (await this.op('budgetStates', keys, args)) as string[]);
  }

  async seedBudget(check: BudgetCheck, seedPico: bigint): Promise<void> {
    await this.op('budgetSeed', [this.budgetKey(check)], [pico(seedPico, 'seedPico')]);
  }

  async raiseSpend(check: BudgetCheck, spentPico: bigint): Promise<BudgetState> {
    const args = [pico(spentPico, 'spentPico'), period(check.periodEndMs)];
    return budgetStates([check], (await this.op('budgetRaise', this.budgetKeys([check]), args)) as string[])[0];
  }

  /** Budgets live in Redis, shared with the other instances, and expire with their period. */
  forgetBudget(): void {}

  async addToSet(key: string, member: string, untilMs: number): Promise<void> {
    const until = period(untilMs);
    await this.op('setAdd', [this.key('values', key)], [member, until]);
  }

  /** A sorted set of equal scores, read in byte (code-point) order from `after` on: the page, never the whole set. */
  async setRange(key: string, after: string | undefined, limit: number): Promise<string[]> {
    const from = after === undefined ? '-' : `(${after}`;
    return this.run(() => this.redis.zrangebylex(this.key('values', key), from, '+', 'LIMIT', 0, limit));
  }

  /** Quits gracefully when connected (pending replies arrive first), else drops the socket and stops reconnecting. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.breaker.stop();
    if (this.redis.status === 'ready') {
      const ended = new Promise<void>((resolve) => this.redis.once('end', () => resolve()));
      try {
        await this.redis.quit();
        // The reply comes just before the socket closes; wait for that too, but never hang a shutdown.
        await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, this.timeoutMs).unref())]);
        return;
      } catch {
        // fall through: drop the socket
      }
    }
    this.redis.disconnect();
  }

  private key(kind: string, key: string): string {
    return `${this.keyPrefix}${kind}:${key}`;
  }

  /** One key per period: instances straddling a period end never reset each other's counters. */
  private budgetKey(c: BudgetCheck): string {
    return `${this.keyPrefix}budget:${c.key}:${period(c.periodEndMs)}`;
  }

  /** Each budget's hash and lease set, in the order of the checks. */
  private budgetKeys(checks: readonly BudgetCheck[]): string[] {
    return checks.flatMap((c) => {
      const key = this.budgetKey(c);
      return [key, `${key}:leases`];
    });
  }

  /** Keys and arguments of take and refund: the buckets' keys; now, then limit and windowMs per bucket. */
  private bucketArgs(buckets: readonly Bucket[], now: number | undefined): [string[], string[]] {
    const keys = buckets.map((b) => this.key('bucket', b.key));
    const args = [time(now)];
    for (const b of buckets) args.push(String(b.limit), String(b.windowMs));
    return [keys, args];
  }

  /** Queues an operation for this turn's batch; settles with its result, or its own error. */
  private op(op: LimitOp, keys: string[], args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queued.push({ op, keys, args, resolve, reject });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      // After the I/O callbacks of this turn: every request they woke adds its operations to the same batch.
      setImmediate(() => this.flush());
    });
  }

  /** Sends what is queued as batches of at most MAX_BATCH operations. */
  private flush(): void {
    this.flushScheduled = false;
    while (this.queued.length > 0) void this.send(this.queued.splice(0, MAX_BATCH));
  }

  private async send(batch: QueuedOp[]): Promise<void> {
    const keys: string[] = [];
    const args: string[] = [String(batch.length)];
    for (const q of batch) {
      keys.push(...q.keys);
      args.push(q.op, String(q.keys.length), String(q.args.length), ...q.args);
    }
    let replies: [number, unknown][];
    try {
      replies = await this.run(() => this.redis.tgLimitBatch(keys.length, ...keys, ...args));
      if (!Array.isArray(replies) || replies.length !== batch.length)
        throw replyError(`limit batch: ${batch.length} operations, an answer of another shape`);
    } catch (err) {
      for (const q of batch) q.reject(err as Error);
      return;
    }
    batch.forEach((q, i) => {
      const [ok, result] = replies[i];
      if (ok === 1) q.resolve(result);
      else q.reject(replyError(`${q.op}: ${String(result)}`));
    });
  }

  /**
   * One operation under the circuit breaker: refused at once while it is open; a time-out or lost connection
   * opens it. An error Redis itself answered (a script error) says Redis is up and leaves it alone.
   */
  private async run<T>(op: () => Promise<T>): Promise<T> {
    if (this.breaker.open && !this.closed)
      throw new Error('Redis limit store unavailable (failed recently; retrying in the background)');
    try {
      await this.ready();
      return await op();
    } catch (err) {
      if (!this.closed && !isReplyError(err)) this.breaker.trip();
      throw err;
    }
  }

  /**
   * The offline queue is off, so a command sent before the connection is ready would fail at once. While a
   * connection attempt is under way (e.g. the first request after start) wait for it, at most the command
   * timeout; while reconnecting after a failure, Redis is known to be down: reject at once.
   */
  private async ready(): Promise<void> {
    if (this.closed) throw new Error('Redis limit store is closed');
    const status = this.redis.status;
    if (status === 'ready') return;
    if (status === 'end') throw new Error('Redis limit store is closed');
    if (status === 'close' || status === 'reconnecting') throw new Error(`Redis limit store unavailable (${status})`);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.nextReady(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`Redis limit store unavailable (${this.redis.status} after ${this.timeoutMs} ms)`)),
            this.timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Settles when the connection attempt under way succeeds or fails; one set of listeners however many wait. */
  private nextReady(): Promise<void> {
    this.readyWaiter ??= new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        this.redis.off('ready', onReady);
        this.redis.off('close', onClose);
        this.readyWaiter = undefined;
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => settle();
      const onClose = () => settle(new Error('Redis limit store unavailable (connection failed)'));
      this.redis.on('ready', onReady);
      this.redis.on('close', onClose);
    });
    return this.readyWaiter;
  }
}
