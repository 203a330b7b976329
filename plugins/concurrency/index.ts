import {
  definePlugin,
  GatewayError,
  type GatewayContext,
  type GatewayPlugin,
  type LeaseRenewer,
  type LimitScope,
  type WorkspaceLimitsService,
} from '../../api';

const HELD = 'concurrency.held';

/** A scope set's scopes that cap open streams, and the slot key of each. */
interface SlotPlan {
  scopes: LimitScope[];
  keys: string[];
}

/**
 * Caps open streaming responses per workspace and per tag value (e.g. at most 5 per customer_id). A slot is
 * taken at admission and given back in onComplete, which runs for every request however it ended (done,
 * failed, aborted), so a slot cannot leak; leases renewed while the stream is open also free the slots of
 * an instance that crashed.
 */
export class ConcurrencyPlugin implements GatewayPlugin {
  readonly name = 'concurrency';
  /** Renews the slot keys each open stream holds. */
  private readonly renewer: LeaseRenewer<readonly string[]>;
  /** Per scope set (WorkspaceLimitsService.scopesOf gives the same array for the same set): its stream-limited scopes and their slot keys. */
  private readonly plans = new WeakMap<readonly LimitScope[], SlotPlan>();

  constructor(private readonly limits: WorkspaceLimitsService) {
    const lease = limits.storeConfig.slot_lease_ms;
    this.renewer = limits.leases(lease, (holder, keys) =>
      Promise.all(keys.map((k) => limits.store.renewSlot(k, holder, lease))),
    );
  }

  /** Synchronous for a request that is not a stream, or has no stream limit. */
  beforeUpstream(ctx: GatewayContext): Promise<void> | undefined {
    const l = this.limits.limitsOf(ctx);
    if (!l || !ctx.stream) return undefined;
    const plan = this.planFor(this.limits.scopesOf(ctx, l));
    return plan.scopes.length === 0 ? undefined : this.acquire(ctx, plan);
  }

  private planFor(all: readonly LimitScope[]): SlotPlan {
    let plan = this.plans.get(all);
    if (!plan) {
      const scopes = all.filter((s) => s.limits.concurrent_streams);
      this.plans.set(all, (plan = { scopes, keys: scopes.map((s) => `streams:${s.key}`) }));
    }
    return plan;
  }

  private async acquire(ctx: GatewayContext, { scopes, keys }: SlotPlan): Promise<void> {
    const store = this.limits.store;
    const lease = this.renewer.leaseMs;
    const acquired: string[] = [];
    ctx.state.set(HELD, acquired); // before the first acquire: whatever happens next, onComplete releases it
    for (let i = 0; i < scopes.length; i++) {
      const s = scopes[i];
      const key = keys[i];
      const result = await this.limits.guard(
        'concurrent streams',
        () => store.acquireSlot(key, ctx.requestId, s.limits.concurrent_streams!, lease),
        { acquired: true, inUse: 0 },
      );
      if (!result.acquired) {
        throw new GatewayError(
          'concurrency_limited',
          `Too many open streams for ${s.label}: ${s.limits.concurrent_streams} at most. Retry when one ends.`,
          {
            headers: { 'retry-after': '1' },
          },
        );
      }
      acquired.push(key);
    }
    this.renewer.add(ctx.requestId, acquired);
  }

  onComplete(ctx: GatewayContext): Promise<void> | undefined {
    const held = ctx.state.get(HELD) as string[] | undefined;
    return held && this.release(ctx, held);
  }

  private async release(ctx: GatewayContext, held: readonly string[]): Promise<void> {
    this.renewer.remove(ctx.requestId);
    await Promise.all(held.map((k) => this.limits.store.releaseSlot(k, ctx.requestId).catch(() => undefined)));
  }
}

export const concurrency = definePlugin({
  name: 'concurrency',
  requires: { plugins: ['auth'] },
  inject: { limits: 'WorkspaceLimits' },
  enforces: ['concurrent_streams'],
  // A stream refused for a full limit takes no rate-limit token (with Redis it would be back only a round trip later).
  order: { after: ['attribution'], before: ['rate-limit'] },
  create: (_container, _options, { limits }) => new ConcurrencyPlugin(limits),
});
