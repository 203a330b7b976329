import {
  BoundedCache,
  definePlugin,
  formatUsd,
  GatewayError,
  parseUsd,
  resolveService,
  TOKENS,
  UNTAGGED,
  type BudgetCheck,
  type BudgetConfig,
  type BudgetSource,
  type BudgetState,
  type BudgetStatus,
  type Clock,
  type GatewayContext,
  type GatewayPlugin,
  type LeaseRenewer,
  type Logger,
  type RequestCostService,
  type UsageStoreService,
  type WorkspaceLimits,
  type WorkspaceLimitsService,
} from '../../core';
import { alertReached } from './alert';
import { periodAt, type Period } from './periods';
import { BudgetPricing, type BudgetPrice } from './unpriced';
import { worstCaseCost, type ReferencedInput } from './worst-case';

const HELD = 'budget.reservation';
/** The price_as stand-in of a request for an unpriced model (budgets.unpriced), for its settlement. */
const STAND_IN = 'budget.stand-in';
/** Budget instances (budget x workspace x tag value) kept ready per budget; beyond that the oldest are dropped. */
const MAX_CACHED = 10_000;
const PERIOD_ADJECTIVE = { day: 'daily', month: 'monthly' } as const;

type StatusBase = Omit<BudgetStatus, 'spentPico' | 'reservedPico' | 'alerted'>;

/** One budget of one period (and, for per_tag budgets, one tag value): its counter key, seed and status. */
interface Applied {
  check: BudgetCheck;
  status: StatusBase;
  /** Resolves once the spend already in the usage store is known; check.seedPico is set by then. */
  seeded?: Promise<void>;
}

/** A configured budget, with what does not change between requests worked out once. */
interface Rule {
  config: BudgetConfig;
  limitPico: bigint;
  /** Fixed tag filter ({} for a workspace-wide budget). */
  tags: [string, string][];
  /** Its instances in their current period, by workspace (and tag value for per_tag budgets). */
  instances: BoundedCache<string, Applied>;
}

/**
 * Spend limits per period (day, month) for a workspace, a tag value, or each value of a tag. Streams cannot
 * overshoot unnoticed: admission reserves the worst case (worst-case.ts: estimated input, at least
 * budgets.referenced_input_tokens when the body references context stored elsewhere, plus the output tokens the
 * request may produce, priced from the catalog), completion settles against the real cost. A request whose
 * reservation does not fit is refused. Crossing alert_at (default 80%) is logged once per period and shown in the admin API.
 *
 * A reservation is a lease held by the request id and renewed while the request is open: if the settlement never
 * comes (the instance died, or the reserve's reply was lost to a time-out while Redis ran it) it lapses after
 * limit_store.reservation_lease_ms instead of holding budget until the period ends.
 */
export class BudgetPlugin implements GatewayPlugin, BudgetSource {
  readonly name = 'budget';
  private readonly rules = new WeakMap<WorkspaceLimits, Rule[]>();
  /** Budget instances whose alert this instance has logged (the key names the period). */
  private readonly alertsLogged = new Set<string>();
  /** Renews the budgets each open request has a reservation in. */
  private readonly renewer: LeaseRenewer<readonly BudgetCheck[]>;

  constructor(
    private readonly limits: WorkspaceLimitsService,
    private readonly cost: RequestCostService,
    private readonly usage: UsageStoreService,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly pricing: BudgetPricing,
    private readonly referencedInput: ReferencedInput,
  ) {
    const lease = limits.storeConfig.reservation_lease_ms;
    this.renewer = limits.leases(lease, (holder, checks) => limits.store.renewReservation(checks, holder, lease));
  }

  async beforeUpstream(ctx: GatewayContext): Promise<void> {
    const l = this.limits.limitsOf(ctx);
    if (!l || l.budgets.length === 0) return;
    const now = this.clock.now();
    const applied: Applied[] = [];
    for (const rule of this.rulesOf(l)) {
      const a = this.instance(ctx, rule, now);
      if (!a) continue;
      if (a.seeded) await a.seeded; // only the first request of a budget and period reads the store
      applied.push(a);
    }
    if (applied.length === 0) return;
    const priced = this.pricing.of(ctx);
    const amountPico = priced ? worstCaseCost(ctx, this.cost, priced, this.referencedInput) : 0n;
    const checks = applied.map((a) => a.check);
    const store = this.limits.store;
    const result = await this.limits.guard(
      'budget',
      () => store.reserve(checks, ctx.requestId, amountPico, this.renewer.leaseMs),
      undefined,
    );
    if (result && !result.allowed) throw refusal(applied, result.states, amountPico, now);
    // Settled even when the store failed open: the spend is added, and a reserve that ran in Redis after its
    // reply timed out is released by request id.
    ctx.state.set(HELD, applied);
    if (priced?.standIn) ctx.state.set(STAND_IN, priced.standIn);
    if (!result) return;
    if (amountPico > 0n) this.renewer.add(ctx.requestId, checks);
    this.alertIfCrossed(applied, result.states);
  }

  async onComplete(ctx: GatewayContext): Promise<void> {
    const applied = ctx.state.get(HELD) as Applied[] | undefined;
    if (!applied) return;
    this.renewer.remove(ctx.requestId);
    const failed = ctx.error !== undefined && !ctx.streamCut;
    const actual = failed || (ctx.status ?? 500) >= 400 ? 0n : (this.actualCost(ctx) ?? 0n);
    const checks = applied.map((a) => a.check);
    const after = await this.limits.guard(
      'budget settle',
      () => this.limits.store.settle(checks, ctx.requestId, actual),
      undefined,
    );
    if (after) this.alertIfCrossed(applied, after);
  }

  /** The request's cost: the one every plugin shares, or at the price_as stand-in's price for an unpriced model. */
  private actualCost(ctx: GatewayContext): bigint | null {
    const standIn = ctx.state.get(STAND_IN) as BudgetPrice['standIn'];
    if (!standIn) return this.cost.of(ctx).costPico;
    return ctx.usage ? this.cost.price(ctx, ctx.usage, standIn).costPico : null;
  }

  /**
   * Every configured budget in its current period, counters read from the limit store: workspace-wide and
   * fixed-tag budgets always, per_tag budgets for each value with spend recorded this period or met by any
   * instance. A budget the limit store has not seen yet shows the spend recorded in the usage store.
   */
  async statuses(now: number): Promise<BudgetStatus[]> {
    const found: Applied[] = [];
    for (const [workspace, limits] of this.limits.byWorkspace) {
      for (const rule of this.rulesOf(limits)) found.push(...(await this.known(workspace, rule, now)));
    }
    const states = await readLimitStore(() => this.limits.store.budgetStates(found.map((a) => a.check)));
    return found.map((a, i) => {
      const { spentPico, reservedPico } = states[i];
      return {
        ...a.status,
        spentPico,
        reservedPico,
        alerted: alertReached(spentPico, a.status.limitPico, a.status.alertAt),
      };
    });
  }

  private rulesOf(l: WorkspaceLimits): Rule[] {
    let rules = this.rules.get(l);
    if (!rules) {
      rules = l.budgets.map((config) => ({
        config,
        limitPico: parseUsd(config.usd),
        tags: Object.entries(config.tag ?? {}),
        instances: new BoundedCache<string, Applied>(MAX_CACHED),
      }));
      this.rules.set(l, rules);
    }
    return rules;
  }

  /** The budget instance this request counts against, or undefined when the budget does not apply to it. */
  private instance(ctx: GatewayContext, rule: Rule, now: number): Applied | undefined {
    const b = rule.config;
    let value: string | undefined;
    if (b.per_tag) {
      value = ctx.tags[b.per_tag];
      if (value === undefined) return undefined;
    } else if (rule.tags.length > 0 && !rule.tags.every(([k, v]) => ctx.tags[k] === v)) {
      return undefined;
    }
    const workspace = ctx.workspace!.id;
    // Looked up per rule by workspace and tag value; an instance of a past period is replaced.
    const lookup = value === undefined ? workspace : `${workspace}\n${value}`;
    const hit = rule.instances.get(lookup);
    if (hit && now < hit.check.periodEndMs && now >= hit.status.periodStart) return hit;

    const tags: [string, string][] = value === undefined ? rule.tags : [[b.per_tag!, value]];
    const period = periodAt(b.period, now);
    const a = describe(this.limits, workspace, rule, tags, period, 0n);
    // Spend recorded before this process knew the budget (earlier runs, other instances) is read once.
    a.seeded = this.usage
      .queryUsage({
        from: period.startMs,
        to: now + 1,
        groupBy: [],
        filters: { workspace, ...Object.fromEntries(tags) },
      })
      .then(
        ([t]) => (a.check.seedPico = t?.costPico ?? 0n),
        () => undefined,
      )
      .then(() => (a.seeded = undefined));
    // Noted once per value and period, so that the admin API of every instance lists it.
    if (b.per_tag)
      this.limits.store.addToSet(tagValuesKey(workspace, b, period), tags[0][1], period.endMs).catch(() => undefined);
    rule.instances.set(lookup, a); // bounded; a later miss only re-reads the store
    return a;
  }

  /** A rule's budget instances this period, seeded from the usage store: one, or one per known tag value. */
  private async known(workspace: string, rule: Rule, now: number): Promise<Applied[]> {
    const b = rule.config;
    const period = periodAt(b.period, now);
    const range = { from: period.startMs, to: now + 1 };
    if (!b.per_tag) {
      const [total] = await this.usage.queryUsage({
        ...range,
        groupBy: [],
        filters: { workspace, ...Object.fromEntries(rule.tags) },
      });
      return [describe(this.limits, workspace, rule, rule.tags, period, total?.costPico ?? 0n)];
    }
    const tag = b.per_tag;
    const seeds = new Map<string, bigint>();
    for (const row of await this.usage.queryUsage({ ...range, groupBy: [tag], filters: { workspace } })) {
      const value = row.group[tag];
      if (value !== null && value !== UNTAGGED) seeds.set(value, row.costPico);
    }
    const met = await readLimitStore(() => this.limits.store.setMembers(tagValuesKey(workspace, b, period)));
    for (const value of met) if (!seeds.has(value)) seeds.set(value, 0n);
    return [...seeds].map(([value, seed]) => describe(this.limits, workspace, rule, [[tag, value]], period, seed));
  }

  private alertIfCrossed(applied: Applied[], states: readonly BudgetState[]): void {
    for (let i = 0; i < applied.length; i++) {
      const { status } = applied[i];
      if (this.alertsLogged.has(status.key) || !alertReached(states[i].spentPico, status.limitPico, status.alertAt))
        continue;
      if (this.alertsLogged.size >= MAX_CACHED) this.alertsLogged.clear(); // bounded; at worst an alert is logged again
      this.alertsLogged.add(status.key);
      this.log.warn(
        {
          budget: status.key,
          workspace: status.workspace,
          scope: status.scope,
          spentUsd: formatUsd(states[i].spentPico),
          limitUsd: formatUsd(status.limitPico),
        },
        `budget alert: ${Math.round(status.alertAt * 100)}% of the ${PERIOD_ADJECTIVE[status.period]} budget used`,
      );
    }
  }
}

/** The budget's identity in the limit store: workspace, scope, period kind and start. */
function budgetKey(
  limits: WorkspaceLimitsService,
  workspace: string,
  b: BudgetConfig,
  tags: readonly [string, string][],
  period: Period,
): string {
  return `ws:${workspace}:${tags.map(([k, v]) => limits.tagScope(k, v)).join(':') || 'all'}:${b.period}:${period.startMs}`;
}

/** The set of tag values a per_tag budget met in a period. */
function tagValuesKey(workspace: string, b: BudgetConfig, period: Period): string {
  return `budget-tags:ws:${workspace}:${b.per_tag}:${b.period}:${period.startMs}`;
}

function describe(
  limits: WorkspaceLimitsService,
  workspace: string,
  rule: Rule,
  tags: readonly [string, string][],
  period: Period,
  seedPico: bigint,
): Applied {
  const b = rule.config;
  const key = budgetKey(limits, workspace, b, tags, period);
  return {
    check: { key, limitPico: rule.limitPico, periodEndMs: period.endMs, seedPico },
    status: {
      key,
      workspace,
      scope: tags.map(([k, v]) => `${k}=${v}`).join(',') || 'workspace',
      period: b.period,
      periodStart: period.startMs,
      periodEnd: period.endMs,
      limitPico: rule.limitPico,
      alertAt: b.alert_at,
    },
  };
}

/** A read for the admin API: the limit store being down is a 503, not an internal error. */
async function readLimitStore<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch {
    throw new GatewayError(
      'limits_unavailable',
      'Budgets cannot be read right now (limit store unavailable); try again shortly.',
      { headers: { 'retry-after': '1' } },
    );
  }
}

/** 429 naming the first budget the reservation does not fit, with Retry-After until its period ends. */
function refusal(applied: Applied[], states: readonly BudgetState[], amountPico: bigint, now: number): GatewayError {
  const i = states.findIndex((s) => s.spentPico + s.reservedPico + amountPico > s.limitPico);
  const { status } = applied[i];
  const whose =
    status.scope === 'workspace' ? `workspace ${status.workspace}` : `${status.scope} in workspace ${status.workspace}`;
  return new GatewayError(
    'budget_exceeded',
    `The ${PERIOD_ADJECTIVE[status.period]} budget of $${formatUsd(status.limitPico)} for ${whose} does not cover this request: ` +
      `$${formatUsd(states[i].spentPico)} spent, $${formatUsd(states[i].reservedPico)} reserved by open requests, this one may cost up to $${formatUsd(amountPico)}.`,
    { headers: { 'retry-after': String(Math.max(1, Math.ceil((status.periodEnd - now) / 1000))) } },
  );
}

export const budget = definePlugin({
  name: 'budget',
  requires: {
    plugins: ['auth'],
    services: [
      'WorkspaceLimits',
      'RequestCost',
      'UsageStore',
      'Logger',
      'BudgetLedger',
      'Clock',
      'Config',
      'Providers',
    ],
  },
  enforces: ['budgets'],
  create: (container) => {
    const cost = resolveService(container, TOKENS.RequestCost);
    const policy = resolveService(container, TOKENS.Config).budgets;
    const plugin = new BudgetPlugin(
      resolveService(container, TOKENS.WorkspaceLimits),
      cost,
      resolveService(container, TOKENS.UsageStore),
      resolveService(container, TOKENS.Logger),
      resolveService(container, TOKENS.Clock),
      new BudgetPricing(cost.prices, policy.unpriced, resolveService(container, TOKENS.Providers)),
      policy.referenced_input_tokens,
    );
    resolveService(container, TOKENS.BudgetLedger).attach(plugin);
    return plugin;
  },
});
