import {
  definePlugin,
  GatewayError,
  type GatewayContext,
  type GatewayPlugin,
  type WorkspaceLimitsService,
} from '../../api';
import type { Bucket, BucketState, LimitScope, TakeResult } from '../../api';

const MINUTE = 60_000;
const PLAN = 'rate-limit.plan';
const TAKEN = 'rate-limit.taken';

const seconds = (ms: number) => String(Math.max(1, Math.ceil(ms / 1000)));

/** What the plugin checks for one set of scopes (WorkspaceLimitsService.scopesOf gives the same array for the same set). */
interface RatePlan {
  scopes: LimitScope[];
  tokenScopes: LimitScope[];
  /** The tokens-per-minute window of each of tokenScopes. */
  tpmKeys: string[];
  buckets: Bucket[];
}

/** Sets the x-ratelimit-* headers of the most constrained bucket (reset is in seconds from now) in `headers`. */
function setRateHeaders(headers: Record<string, string>, states: readonly BucketState[]): Record<string, string> {
  let tightest = states[0];
  for (const s of states) if (s.remaining < tightest.remaining) tightest = s;
  headers['x-ratelimit-limit'] = String(tightest.limit);
  headers['x-ratelimit-remaining'] = String(tightest.remaining);
  headers['x-ratelimit-reset'] = String(Math.ceil(tightest.resetMs / 1000));
  return headers;
}

/**
 * Request rate (per minute, per second burst) and tokens per minute, for the workspace and per tag value
 * (e.g. each customer_id), enforced at admission. Token usage is counted when the request completes, so
 * tokens_per_minute is a soft limit: requests in flight when the minute's total reaches it still finish.
 * A request that takes a token here but never goes upstream (a plugin after this one refused it, such as the
 * concurrency or budget limit) gets its token back: the rate limits count requests let through, and a client
 * retrying a full stream limit is not also pushed into a rate limit by its refused attempts.
 */
export class RateLimitPlugin implements GatewayPlugin {
  readonly name = 'rate-limit';

  /** Per scope set (null: none of its scopes has a rate limit). */
  private readonly plans = new WeakMap<readonly LimitScope[], RatePlan | null>();

  constructor(private readonly limits: WorkspaceLimitsService) {}

  /** Synchronous when no scope of the request has a rate limit: nothing rate-related runs. */
  beforeUpstream(ctx: GatewayContext): Promise<void> | undefined {
    const l = this.limits.limitsOf(ctx);
    const plan = l && this.planFor(this.limits.scopesOf(ctx, l));
    return plan && this.take(ctx, plan);
  }

  /** Synchronous when the store answers at once (in memory): no promise per request. */
  private take(ctx: GatewayContext, plan: RatePlan): Promise<void> | undefined {
    ctx.state.set(PLAN, plan);
    const at = this.limits.store.immediate;
    if (!at) return this.takeFromStore(ctx, plan);
    const { tpmKeys, buckets } = plan;
    if (tpmKeys.length > 0)
      checkTokens(
        plan,
        tpmKeys.map((key) => this.limits.guardNow('tokens_per_minute', () => at.windowTotal(key, MINUTE), 0)),
      );
    if (buckets.length > 0)
      noteTaken(
        ctx,
        plan,
        this.limits.guardNow('request rate', () => at.take(buckets), undefined),
      );
    return undefined;
  }

  private async takeFromStore(ctx: GatewayContext, plan: RatePlan): Promise<void> {
    const { tpmKeys, buckets } = plan;
    const store = this.limits.store;
    if (tpmKeys.length > 0) {
      const used = await Promise.all(
        tpmKeys.map((key) => this.limits.guard('tokens_per_minute', () => store.windowTotal(key, MINUTE), 0)),
      );
      checkTokens(plan, used);
    }
    if (buckets.length === 0) return;
    noteTaken(ctx, plan, await this.limits.guard('request rate', () => store.take(buckets), undefined));
  }

  /** The rate-limited scopes among a request's scopes and their buckets, worked out once per scope set. */
  private planFor(all: readonly LimitScope[]): RatePlan | undefined {
    let plan = this.plans.get(all);
    if (plan === undefined) {
      const scopes = all.filter(
        (s) => s.limits.requests_per_minute || s.limits.requests_per_second || s.limits.tokens_per_minute,
      );
      const tokenScopes = scopes.filter((s) => s.limits.tokens_per_minute);
      plan =
        scopes.length === 0
          ? null
          : {
              scopes,
              tokenScopes,
              tpmKeys: tokenScopes.map((s) => `tpm:${s.key}`),
              buckets: scopes.flatMap((s) => [
                ...(s.limits.requests_per_minute
                  ? [{ key: `rpm:${s.key}`, limit: s.limits.requests_per_minute, windowMs: MINUTE }]
                  : []),
                ...(s.limits.requests_per_second
                  ? [{ key: `rps:${s.key}`, limit: s.limits.requests_per_second, windowMs: 1000 }]
                  : []),
              ]),
            };
      this.plans.set(all, plan);
    }
    return plan ?? undefined;
  }

  /** Synchronous unless a token goes back or tokens are counted. */
  onComplete(ctx: GatewayContext): Promise<void> | undefined {
    const taken = ctx.state.get(TAKEN) as Bucket[] | undefined;
    if (taken && !ctx.sentUpstream) {
      return this.limits
        .guard('request rate refund', () => this.limits.store.refund(taken), undefined)
        .then(
          () => undefined,
          () => undefined,
        );
    }
    const plan = ctx.state.get(PLAN) as RatePlan | undefined;
    const u = ctx.usage;
    if (!plan || plan.tpmKeys.length === 0 || !u) return undefined;
    const tokens =
      (u.inputTokens ?? 0) +
      (u.outputTokens ?? 0) +
      (u.cacheReadTokens ?? 0) +
      (u.cacheWriteTokens ?? 0) +
      (u.cacheWrite1hTokens ?? 0);
    if (tokens === 0) return undefined;
    const at = this.limits.store.immediate;
    if (!at) return this.countTokens(plan.tpmKeys, tokens);
    for (const key of plan.tpmKeys) {
      try {
        this.limits.guardNow('tokens_per_minute', () => at.addToWindow(key, MINUTE, tokens), 0);
      } catch {
        // on_error closed: the request is already answered, there is nothing to refuse
      }
    }
    return undefined;
  }

  private async countTokens(tpmKeys: readonly string[], tokens: number): Promise<void> {
    for (const key of tpmKeys) {
      await this.limits
        .guard('tokens_per_minute', () => this.limits.store.addToWindow(key, MINUTE, tokens), 0)
        .catch(() => 0);
    }
  }
}

/** Refuses the request when a tokens-per-minute window (`used`, one per token scope) is full. */
function checkTokens({ tokenScopes }: RatePlan, used: readonly number[]): void {
  const full = tokenScopes.findIndex((s, i) => used[i] >= s.limits.tokens_per_minute!);
  if (full < 0) return;
  const wait = MINUTE - (Date.now() % MINUTE);
  const { label, limits } = tokenScopes[full];
  throw new GatewayError(
    'rate_limited',
    `Token rate limit reached for ${label}: ${used[full]} of ${limits.tokens_per_minute} tokens per minute used. Retry after ${seconds(wait)} s.`,
    { headers: { 'retry-after': seconds(wait) } },
  );
}

/** Refuses the request when a bucket had no token; otherwise notes what was taken and sets the x-ratelimit-* headers. */
function noteTaken(ctx: GatewayContext, { buckets, scopes }: RatePlan, result: TakeResult | undefined): void {
  if (!result) return; // the store failed open
  if (!result.allowed) {
    const blocked = result.buckets.filter((b) => b.retryAfterMs > 0);
    const wait = Math.max(...blocked.map((b) => b.retryAfterMs));
    const which = blocked.map((b) => `${describe(b, buckets, scopes)}`).join('; ');
    throw new GatewayError('rate_limited', `Rate limit reached: ${which}. Retry after ${seconds(wait)} s.`, {
      headers: { ...setRateHeaders({}, result.buckets), 'retry-after': seconds(wait) },
    });
  }
  ctx.state.set(TAKEN, buckets);
  setRateHeaders(ctx.responseHeaders, result.buckets); // straight into the answer's headers, no object in between
}

function describe(state: BucketState, buckets: readonly Bucket[], scopes: readonly LimitScope[]): string {
  const bucket = buckets.find((b) => b.key === state.key)!;
  const scope = scopes.find((s) => bucket.key.endsWith(s.key))!;
  return `${state.limit} requests per ${bucket.windowMs === MINUTE ? 'minute' : 'second'} for ${scope.label}`;
}

export const rateLimit = definePlugin({
  name: 'rate-limit',
  requires: { plugins: ['auth'] },
  inject: { limits: 'WorkspaceLimits' },
  enforces: ['requests_per_minute', 'requests_per_second', 'tokens_per_minute'],
  // budget_exceeded says Retry-After until the period ends, which a request held back only by the rate limit must not get.
  order: { after: ['attribution'], before: ['budget'] },
  create: (_container, _options, { limits }) => new RateLimitPlugin(limits),
});
