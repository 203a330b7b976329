import {
  definePlugin,
  GatewayError,
  type GatewayContext,
  type GatewayPlugin,
  type ImmediateLimitOps,
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

  /** Synchronous for a request that is not a stream, has no stream limit, or whose store answers at once. */
  beforeUpstream(ctx: GatewayContext): Promise<void> | undefined {
    const l = this.limits.limitsOf(ctx);
    if (!l || !ctx.stream) return undefined;
    const plan = this.planFor(this.limits.scopesOf(ctx, l));
    if (plan.scopes.length === 0) return undefined;
    const at = this.limits.store.immediate;
    return at ? this.acquireNow(ctx, plan, at) : this.acquire(ctx, plan);
  }

  private planFor(all: readonly LimitScope[]): SlotPlan {
    let plan = this.plans.get(all);
    if (!plan) {
      const scopes = all.filter((s) => s.limits.concurrent_streams);
      this.plans.set(all, (plan = { scopes, keys: scopes.map((s) => `streams:${s.key}`) }));
    }
    return plan;
  }

  /** The store answers at once (in memory): no promise per stream. */
  private acquireNow(ctx: GatewayContext, plan: SlotPlan, at: ImmediateLimitOps): undefined {
    const acquired = holding(ctx);
    for (let i = 0; i < plan.scopes.length; i++) {
      const limit = plan.scopes[i].limits.concurrent_streams!;
      const take = () => at.acquireSlot(plan.keys[i], ctx.requestId, limit, this.renewer.leaseMs);
      took(plan, i, acquired, this.limits.guardNow(WHAT, take, WHEN_OPEN));
    }
    this.renewer.add(ctx.requestId, acquired);
    return undefined;
  }

  private async acquire(ctx: GatewayContext, plan: SlotPlan): Promise<void> {
    const store = this.limits.store;
    const acquired = holding(ctx);
    for (let i = 0; i < plan.scopes.length; i++) {
      const limit = plan.scopes[i].limits.concurrent_streams!;
      const take = () => store.acquireSlot(plan.keys[i], ctx.requestId, limit, this.renewer.leaseMs);
      took(plan, i, acquired, await this.limits.guard(WHAT, take, WHEN_OPEN));
    }
    this.renewer.add(ctx.requestId, acquired);
  }

  onComplete(ctx: GatewayContext): Promise<void> | undefined {
    const held = ctx.state.get(HELD) as string[] | undefined;
    if (!held) return undefined;
    this.renewer.remove(ctx.requestId);
    const at = this.limits.store.immediate;
    if (!at) return this.release(ctx, held);
    for (const key of held)
      try {
        at.releaseSlot(key, ctx.requestId);
      } catch {
        // as below: a slot not given back lapses with its lease
      }
    return undefined;
  }

  private async release(ctx: GatewayContext, held: readonly string[]): Promise<void> {
    await Promise.all(held.map((k) => this.limits.store.releaseSlot(k, ctx.requestId).catch(() => undefined)));
  }
}

const WHAT = 'concurrent streams';
/** What a slot is taken as when the store fails and limit_store.on_error is open. */
const WHEN_OPEN = { acquired: true, inUse: 0 };

/** The list of the stream's slot keys, kept before the first is taken: whatever happens next, onComplete releases it. */
function holding(ctx: GatewayContext): string[] {
  const acquired: string[] = [];
  ctx.state.set(HELD, acquired);
  return acquired;
}

/** Notes the slot of the plan's i-th scope as held, or refuses the stream when that scope's slots are all in use. */
function took(plan: SlotPlan, i: number, acquired: string[], result: { acquired: boolean }): void {
  const s = plan.scopes[i];
  if (!result.acquired)
    throw new GatewayError(
      'concurrency_limited',
      `Too many open streams for ${s.label}: ${s.limits.concurrent_streams} at most. Retry when one ends.`,
      { headers: { 'retry-after': '1' } },
    );
  acquired.push(plan.keys[i]);
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
