import type { Logger } from 'pino';
import type { BudgetConfig, LimitStoreConfig, WorkspaceLimits } from '../config/limits';
import type { GatewayConfig } from '../config/schema';
import type { GatewayContext } from '../core/context';
import { GatewayError } from '../core/errors';
import { BoundedCache } from '../plugin-kit/bounded-cache';
import type { LeaseRenewer, LimitScope, LimitStore, WorkspaceLimitsService } from '../contracts/limit-store';
import { LeaseRenewals } from './lease-renewer';
import { scopesOf } from './limit-scopes';

/**
 * What every limit plugin needs: the workspaces' limits, the shared counters, and the store-failure policy. One per
 * gateway, registered by the runtime under TOKENS.WorkspaceLimits (so the limit plugins share one log throttle).
 */
export class LimitsContext implements WorkspaceLimitsService {
  private readonly workspaces: Map<string, WorkspaceLimits>;
  /** Each workspace's YAML limits, to which its runtime budgets are added. */
  private readonly configured: ReadonlyMap<string, WorkspaceLimits>;
  /** Scopes by workspace and tag values (scopesOf). */
  private readonly scopes = new BoundedCache<string, readonly LimitScope[]>(1000);
  private lastWarning = 0;

  constructor(
    config: GatewayConfig,
    readonly store: LimitStore,
    readonly storeConfig: LimitStoreConfig,
    private readonly log: Logger,
  ) {
    this.configured = new Map(config.workspaces.map((w) => [w.id, w.limits]));
    this.workspaces = new Map(this.configured);
  }

  get byWorkspace(): ReadonlyMap<string, WorkspaceLimits> {
    return this.workspaces;
  }

  /**
   * Puts the runtime budgets of the workspaces given after their YAML ones (none: the YAML ones alone). Only those
   * get a new limits object: plugins work out what they need once per object.
   */
  setRuntimeBudgets(changed: ReadonlyMap<string, readonly BudgetConfig[]>): void {
    for (const [id, runtime] of changed) {
      const yaml = this.configured.get(id);
      if (yaml) this.workspaces.set(id, runtime.length ? { ...yaml, budgets: [...yaml.budgets, ...runtime] } : yaml);
    }
  }

  leases<T>(leaseMs: number, renew: (holder: string, held: T) => Promise<unknown>): LeaseRenewer<T> {
    return new LeaseRenewals(leaseMs, renew);
  }

  tagScope(key: string, value: string): string {
    return tagScope(key, value);
  }

  limitsOf(ctx: GatewayContext): WorkspaceLimits | undefined {
    return ctx.workspace ? this.workspaces.get(ctx.workspace.id) : undefined;
  }

  /**
   * The scopes of a request (services/limit-scopes.ts), the same array for the same workspace and tag values: requests
   * fall under a few scopes again and again, and each limit plugin keeps what it derives from them per array.
   */
  scopesOf(ctx: GatewayContext, limits: WorkspaceLimits): readonly LimitScope[] {
    // Each value with its length first: the key is unambiguous whatever the values hold (plugins may add tags).
    const workspace = ctx.workspace!.id;
    let key = `${workspace.length}:${workspace}`;
    for (const tag in limits.per_tag) {
      const value = ctx.tags[tag];
      key += value === undefined ? '|-' : `|${value.length}:${value}`;
    }
    let scopes = this.scopes.get(key);
    if (!scopes) this.scopes.set(key, (scopes = Object.freeze(scopesOf(ctx, limits))));
    return scopes;
  }

  /**
   * Runs a store operation under the configured failure policy: when the store is unreachable, either the
   * limit is skipped (open) or the request is refused with 503 (closed). Logged at most every 10 s per store.
   * The operation's own promise carries the policy (no async frame of its own: it runs several times a request).
   */
  guard<T>(what: string, op: () => Promise<T>, whenOpen: T): Promise<T> {
    const failed = (err: unknown) => this.failed(what, err, whenOpen);
    try {
      return Promise.resolve(op()).then(undefined, failed); // resolve(): a store answering without a promise works too
    } catch (err) {
      return Promise.reject(err).then(undefined, failed);
    }
  }

  guardNow<T>(what: string, op: () => T, whenOpen: T): T {
    try {
      return op();
    } catch (err) {
      return this.failed(what, err, whenOpen);
    }
  }

  private failed<T>(what: string, err: unknown, whenOpen: T): T {
    if (err instanceof GatewayError) throw err;
    const now = Date.now();
    if (now - this.lastWarning > 10_000) {
      this.lastWarning = now;
      this.log.warn(
        { err, what, policy: this.storeConfig.on_error },
        `limit store unavailable: failing ${this.storeConfig.on_error}`,
      );
    }
    if (this.storeConfig.on_error === 'open') return whenOpen;
    throw new GatewayError(
      'limits_unavailable',
      'Limits cannot be checked right now (limit store unavailable); try again shortly.',
      { headers: { 'retry-after': '1' } },
    );
  }
}

/** Key fragment for a tag value; tag values may contain any character, so they are encoded. */
export function tagScope(key: string, value: string): string {
  return `tag:${key}=${encodeURIComponent(value)}`;
}
