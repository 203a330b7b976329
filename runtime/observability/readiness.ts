import type { Logger } from 'pino';
import type { ReadinessChecks, ReadinessReport } from '../../contracts/readiness';

/**
 * Whether this instance should get traffic (GET /readyz): the usage store takes writes, the limit store answers
 * when one is configured (Redis), and the gateway is not shutting down. The store and Redis checks run at most
 * once per `ttlMs` whatever the probe rate (probes that arrive meanwhile share the last result or the run under
 * way) and give up after `timeoutMs`, so a hung dependency never hangs the probe.
 */
export interface ReadinessDeps {
  /** Rejects when the usage store could not take a write now; writes nothing. */
  storeWritable: () => Promise<void>;
  /** Round trip to the limit store; absent when limits are kept in memory. */
  limitStorePing?: () => Promise<unknown>;
  draining: () => boolean;
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
    const failed = (Object.keys(checks) as (keyof ReadinessChecks)[]).filter(
      (k) => checks[k] !== 'ok' && checks[k] !== 'not_configured',
    );
    return { ready: failed.length === 0, checks, failed };
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
