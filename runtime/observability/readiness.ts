import type { Logger } from 'pino';
import type { ReadinessDependency } from '../../config/readiness';
import type { ReadinessCheck, ReadinessChecks, ReadinessReport } from '../../contracts/readiness';

/**
 * Whether this instance should get traffic (GET /readyz): the gateway is not shutting down, and no dependency in
 * `failOn` is down (the usage store takes writes, the limit store answers when one is configured). A dependency
 * that is down but not in `failOn` makes the instance degraded, still ready: taking every replica out of service
 * for a shared store's blip would stop traffic that the store's absence does not (records queue and spill). The
 * store and Redis checks run at most once per `ttlMs` whatever the probe rate (probes that arrive meanwhile share the last result or the run under
 * way) and give up after `timeoutMs`, so a hung dependency never hangs the probe.
 */
export interface ReadinessDeps {
  /** Rejects when the usage store could not take a write now; writes nothing. */
  storeWritable: () => Promise<void>;
  /** Round trip to the limit store; absent when limits are kept in memory. */
  limitStorePing?: () => Promise<unknown>;
  draining: () => boolean;
  /** The dependencies whose failure fails readiness (probes.readiness.fail_on); none when absent. */
  failOn?: ReadonlySet<ReadinessDependency>;
  logger: Logger;
}

export class Readiness {
  private readonly store: CachedCheck;
  private readonly limitStore: CachedCheck | undefined;

  constructor(
    private readonly deps: ReadinessDeps,
    { ttlMs = 1000, timeoutMs = 2000 }: { ttlMs?: number; timeoutMs?: number } = {},
  ) {
    this.store = new CachedCheck('usage store', deps.storeWritable, ttlMs, timeoutMs, deps.logger);
    this.limitStore =
      deps.limitStorePing && new CachedCheck('limit store (Redis)', deps.limitStorePing, ttlMs, timeoutMs, deps.logger);
  }

  async report(): Promise<ReadinessReport> {
    const [store, limitStore] = await Promise.all([this.store.passes(), this.limitStore?.passes()]);
    const checks: ReadinessChecks = {
      store: store ? 'ok' : 'failed',
      limit_store: limitStore === undefined ? 'not_configured' : limitStore ? 'ok' : 'failed',
      shutdown: this.deps.draining() ? 'draining' : 'ok',
    };
    const down = (Object.keys(checks) as ReadinessCheck[]).filter(
      (k) => checks[k] !== 'ok' && checks[k] !== 'not_configured',
    );
    const fails = (k: ReadinessCheck) => k === 'shutdown' || this.deps.failOn?.has(k) === true;
    const failed = down.filter(fails);
    return { ready: failed.length === 0, checks, failed, degraded: down.filter((k) => !fails(k)) };
  }
}

/** One dependency check with its result kept for `ttlMs`; a change of state is logged once, with the reason. */
class CachedCheck {
  private last: { ok: boolean; at: number } | undefined;
  private running: Promise<boolean> | undefined;

  constructor(
    private readonly what: string,
    private readonly check: () => Promise<unknown>,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  passes(): Promise<boolean> {
    if (this.last && performance.now() - this.last.at < this.ttlMs) return Promise.resolve(this.last.ok);
    return (this.running ??= this.run().finally(() => (this.running = undefined)));
  }

  private async run(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    let ok = true;
    try {
      await Promise.race([this.check(), timeout]);
    } catch (err) {
      ok = false;
      // The reason goes to the log only: the probe's answer names the check, never a path or an address.
      if (this.last?.ok !== false)
        this.logger.warn(
          { check: this.what, err: err instanceof Error ? err.message : String(err) },
          'readiness check failed',
        );
    } finally {
      clearTimeout(timer);
    }
    if (ok && this.last?.ok === false) this.logger.info({ check: this.what }, 'readiness check passes again');
    this.last = { ok, at: performance.now() };
    return ok;
  }
}
