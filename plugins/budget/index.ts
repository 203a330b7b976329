import {
  budgetReadsOf,
  definePlugin,
  type BudgetCheck,
  type BudgetCursor,
  type BudgetReads,
  type BudgetReservation,
  type BudgetSource,
  type BudgetState,
  type Clock,
  type GatewayContext,
  type GatewayPlugin,
  type LeaseRenewer,
  type Logger,
  type RecordQueuesService,
  type RequestCostService,
  type UsageStoreService,
  type WorkspaceLimits,
  type WorkspaceLimitsService,
} from '../../api';
import { ActiveBudgets, type Applied } from './active-budgets';
import { BudgetAlerts } from './alert';
import { budgetPage, listingOrder, type ListedRule } from './budget-pages';
import { affordableOutput, clampFloor, clampOutput, remainingPico } from './clamp';
import { describe, perValuesKey, type Rule } from './budget-instance';
import { rulesFrom, scopeValue } from './rules';
import { refusal, spendUnavailable } from './refusals';
import { periodAt } from './periods';
import { BudgetPricing, type BudgetPrice } from './unpriced';
import { worstCase, type ReferencedInput } from './worst-case';

const HELD = 'budget.reservation';

/** What a request admitted under budgets holds until it settles (one entry of ctx.state). */
interface Held {
  applied: Applied[];
  /** Their limit-store counters, in the same order. */
  checks: BudgetCheck[];
  /** The worst case reserved, settled when the answer's cost turns out unknown. */
  reservedPico: bigint;
  /** The price_as stand-in of a request for an unpriced model (budgets.unpriced), for its settlement. */
  standIn: BudgetPrice['standIn'];
}
/** How many times a clamp is worked out again when other requests took what was left meanwhile. */
const CLAMP_ATTEMPTS = 3;

/** What the budget plugin is made of (built once, with the pipeline). */
interface BudgetDeps {
  limits: WorkspaceLimitsService;
  cost: RequestCostService;
  usage: UsageStoreService;
  log: Logger;
  clock: Clock;
  pricing: BudgetPricing;
  referencedInput: ReferencedInput;
  records: Pick<RecordQueuesService, 'writtenBefore'>;
  policy: { spend_read_wait_ms: number; max_active: number };
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
  /** Logs a budget's alert once per period. */
  private readonly alerts: BudgetAlerts;
  /** Renews the budgets each open request has a reservation in. */
  private readonly renewer: LeaseRenewer<readonly BudgetCheck[]>;
  /** The budget instances in use, their spend read off the request path. */
  readonly active: ActiveBudgets;
  private ruleCount = 0;

  private readonly limits: WorkspaceLimitsService;
  private readonly cost: RequestCostService;
  private readonly usage: UsageStoreService;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly pricing: BudgetPricing;
  private readonly referencedInput: ReferencedInput;
  private readonly policy: BudgetDeps['policy'];

  constructor({ limits, cost, usage, log, clock, pricing, referencedInput, records, policy }: BudgetDeps) {
    this.limits = limits;
    this.cost = cost;
    this.usage = usage;
    this.log = log;
    this.clock = clock;
    this.pricing = pricing;
    this.referencedInput = referencedInput;
    this.policy = policy;
    this.alerts = new BudgetAlerts(log);
    const lease = limits.storeConfig.reservation_lease_ms;
    this.renewer = limits.leases(lease, (holder, checks) => limits.store.renewReservation(checks, holder, lease));
    this.active = new ActiveBudgets(policy.max_active, limits.store, usage, records, log);
    // Workspace-wide and fixed-tag budgets: their spend this period is read at start, before the first request.
    const now = clock.now();
    for (const [workspace, l] of limits.byWorkspace) {
      for (const rule of this.rulesOf(l, workspace)) if (!rule.per) this.instanceOf(workspace, rule, rule.tags, now);
    }
  }

  /**
   * Synchronous when the workspace has no budget (nothing budget-related runs), and when the budgets' spend is
   * known and the limit store answers at once (in memory) and has room: the pipeline stays synchronous.
   */
  beforeUpstream(ctx: GatewayContext): Promise<void> | undefined {
    const l = this.limits.limitsOf(ctx);
    if (!l || l.budgets.length === 0) return undefined;
    const now = this.clock.now();
    const applied: Applied[] = [];
    for (const rule of this.rulesOf(l, ctx.workspace!.id)) {
      const a = this.instance(ctx, rule, now);
      if (a) applied.push(a);
    }
    if (applied.length === 0) return undefined;
    // Only the first requests of a budget and period wait for its spend to be read, and at most spend_read_wait_ms.
    const loading = this.active.ready(applied, this.policy.spend_read_wait_ms);
    return loading ? loading.then(() => this.reserve(ctx, applied, now)) : this.reserve(ctx, applied, now);
  }

  private reserve(ctx: GatewayContext, applied: Applied[], now: number): Promise<void> | undefined {
    if (!applied.every(spendLoaded)) this.spendUnknown(applied.filter((a) => !spendLoaded(a)));
    const priced = this.pricing.of(ctx);
    const amountPico = priced
      ? this.pricing.reservation(ctx, worstCase(ctx, this.cost, priced, this.referencedInput))
      : 0n;
    const checks = applied.map((a) => a.check);
    const held: Held = { applied, checks, reservedPico: amountPico, standIn: priced?.standIn };
    const at = this.limits.store.immediate;
    if (!at) return this.reserveAll(ctx, checks, amountPico).then((r) => this.admit(ctx, held, priced, r, now));
    const leaseMs = this.renewer.leaseMs;
    const result = this.limits.guardNow(
      'budget',
      () => at.reserve(checks, ctx.requestId, amountPico, leaseMs),
      undefined,
    );
    return this.admit(ctx, held, priced, result, now);
  }

  /** Holds what was reserved, or clamps or refuses when the reservation did not fit (asynchronous only then). */
  private admit(
    ctx: GatewayContext,
    held: Held,
    priced: BudgetPrice | undefined,
    result: BudgetReservation | undefined,
    now: number,
  ): Promise<void> | undefined {
    if (result && !result.allowed) return this.clampOrRefuse(ctx, held, priced, result, now);
    this.hold(ctx, held, result);
    return undefined;
  }

  private async clampOrRefuse(
    ctx: GatewayContext,
    held: Held,
    priced: BudgetPrice | undefined,
    refused: BudgetReservation,
    now: number,
  ): Promise<void> {
    const { applied, reservedPico } = held;
    const clamped = priced && (await this.clamp(ctx, applied, refused.states, reservedPico, priced));
    if (!clamped) throw refusal(applied, refused.states, reservedPico, now);
    held.reservedPico = clamped.amountPico;
    this.hold(ctx, held, clamped.result);
  }

  /**
   * Held until settled, even when the store failed open (`result` undefined): the spend is added, and a reserve
   * that ran in Redis after its reply timed out is released by request id.
   */
  private hold(ctx: GatewayContext, held: Held, result: BudgetReservation | undefined): void {
    ctx.state.set(HELD, held);
    for (const a of held.applied) a.open++;
    if (!result) return;
    if (held.reservedPico > 0n) this.renewer.add(ctx.requestId, held.checks);
    this.alerts.ifCrossed(held.applied, result.states);
  }

  private reserveAll(ctx: GatewayContext, checks: readonly BudgetCheck[], amountPico: bigint) {
    const store = this.limits.store;
    return this.limits.guard(
      'budget',
      () => store.reserve(checks, ctx.requestId, amountPico, this.renewer.leaseMs),
      undefined,
    );
  }

  /**
   * on_exceed clamp (clamp.ts): the request's output-token limit lowered until its reservation fits what the
   * budgets have left, and reserved at that. Another request may take what was left meanwhile: then it is worked
   * out again from the budgets' new states, a few times at most. Undefined: refused as it is.
   */
  private async clamp(
    ctx: GatewayContext,
    applied: Applied[],
    refusedAt: readonly BudgetState[],
    amountPico: bigint,
    priced: BudgetPrice,
  ): Promise<{ result: BudgetReservation | undefined; amountPico: bigint } | undefined> {
    const floor = clampFloor(applied, refusedAt, amountPico);
    if (floor === undefined) return undefined;
    let states = refusedAt;
    for (let attempt = 0; attempt < CLAMP_ATTEMPTS; attempt++) {
      const left = remainingPico(states);
      const tokens = affordableOutput(ctx, this.cost, priced, this.referencedInput, left, floor);
      if (tokens === undefined) return undefined;
      const clampedPico = this.pricing.reservation(
        ctx,
        worstCase(ctx, this.cost, priced, this.referencedInput, tokens),
      );
      const result = await this.reserveAll(
        ctx,
        applied.map((a) => a.check),
        clampedPico,
      );
      if (!result || result.allowed) {
        clampOutput(ctx, tokens);
        return { result, amountPico: clampedPico };
      }
      states = result.states;
    }
    return undefined;
  }

  onComplete(ctx: GatewayContext): Promise<void> | undefined {
    const held = ctx.state.get(HELD) as Held | undefined;
    return held && this.settle(ctx, held);
  }

  /** Synchronous when the limit store answers at once (in memory). */
  private settle(ctx: GatewayContext, { applied, checks, reservedPico, standIn }: Held): Promise<void> | undefined {
    this.renewer.remove(ctx.requestId);
    const failed = ctx.error !== undefined && !ctx.streamCut;
    // An answer whose cost is unknown (no usage, a unit the price lacks) counts as what was reserved for it.
    const actual = failed || (ctx.status ?? 500) >= 400 ? 0n : (this.actualCost(ctx, standIn) ?? reservedPico);
    // The request's record was queued before (the declared order): see ActiveBudgets on forgetting.
    const settledAt = Date.now();
    for (const a of applied) {
      a.open--;
      a.settledAt = settledAt;
      if (a.check.seedPending) a.countedUnseeded = true;
    }
    const store = this.limits.store;
    const at = store.immediate;
    if (!at) {
      return this.limits
        .guard('budget settle', () => store.settle(checks, ctx.requestId, actual), undefined)
        .then(
          (after) => this.settled(applied, after),
          (err: unknown) => {
            this.settled(applied, undefined);
            throw err;
          },
        );
    }
    let after: BudgetState[] | undefined;
    try {
      after = this.limits.guardNow('budget settle', () => at.settle(checks, ctx.requestId, actual), undefined);
    } catch (err) {
      this.settled(applied, undefined);
      throw err;
    }
    this.settled(applied, after);
    return undefined;
  }

  /** A settlement the limit store did not take (`after` undefined) is put back from the usage store's records. */
  private settled(applied: Applied[], after: BudgetState[] | undefined): void {
    if (after) this.alerts.ifCrossed(applied, after);
    else this.active.lost(applied);
  }

  async close(): Promise<void> {
    this.active.stop();
  }

  /**
   * Budgets whose spend this period is not known yet (its read failed, or is still under way after the wait):
   * refused with 503 budget_unavailable under on_error closed; under open, counted from 0 in the limit store,
   * marked unseeded, and reconciled once the read succeeds (ActiveBudgets).
   */
  private spendUnknown(unknown: readonly Applied[]): void {
    if (this.limits.storeConfig.on_error === 'closed') throw spendUnavailable(unknown[0].status);
    for (const a of unknown) a.countedUnseeded = true;
  }

  /** The request's cost: the one every plugin shares, or at the price_as stand-in's price for an unpriced model. */
  private actualCost(ctx: GatewayContext, standIn: BudgetPrice['standIn']): bigint | null {
    if (!standIn) return this.cost.of(ctx).costPico;
    return ctx.usage ? this.cost.price(ctx, ctx.usage, standIn).costPico : null;
  }

  /** A page of the configured budgets in their current period (budget-pages.ts). */
  page(now: number, reads: BudgetReads | undefined, after: BudgetCursor | undefined, limit: number) {
    const rules: ListedRule[] = [];
    for (const [workspace, limits] of this.limits.byWorkspace)
      for (const rule of this.rulesOf(limits, workspace)) rules.push({ workspace, rule });
    return budgetPage(this.limits, rules.sort(listingOrder), reads ?? budgetReadsOf(this.usage), { now, after, limit });
  }

  private rulesOf(l: WorkspaceLimits, workspace: string): Rule[] {
    let rules = this.rules.get(l);
    if (!rules) {
      rules = rulesFrom(workspace, l.budgets, this.ruleCount);
      this.ruleCount += rules.length;
      this.rules.set(l, rules);
    }
    return rules;
  }

  /** The budget instance this request counts against, or undefined when the budget does not apply to it. */
  private instance(ctx: GatewayContext, rule: Rule, now: number): Applied | undefined {
    if (!rule.per) {
      if (rule.tags.length > 0 && !rule.tags.every(([k, v]) => scopeValue(ctx, k) === v)) return undefined;
      return this.instanceOf(ctx.workspace!.id, rule, rule.tags, now, ctx.startedAt);
    }
    const value = scopeValue(ctx, rule.per);
    return value === undefined
      ? undefined
      : this.instanceOf(ctx.workspace!.id, rule, [[rule.per, value]], now, ctx.startedAt);
  }

  /**
   * The instance of a budget for a workspace and tag values in the period holding `now`: the one in use, or a new
   * one whose spend recorded before `since` (the first request's start) is read in the background.
   */
  private instanceOf(
    workspace: string,
    rule: Rule,
    tags: readonly [string, string][],
    now: number,
    since = now,
  ): Applied {
    const b = rule.config;
    // Each part with its length first: unambiguous whatever the tag value holds.
    const value = rule.per ? tags[0][1] : '';
    const lookup = `${rule.id}:${workspace.length}:${workspace}:${value}`;
    const hit = this.active.get(lookup, now);
    if (hit) return hit;
    const period = periodAt(b.period, now);
    const a = describe(this.limits, workspace, rule, tags, period, 0n);
    a.check.seedPending = true;
    a.since = Math.max(period.startMs, Math.min(since, now));
    // Noted once per value and period, so that the admin API of every instance lists it.
    if (rule.per)
      this.limits.store.addToSet(perValuesKey(workspace, rule, period), value, period.endMs).catch(() => undefined);
    this.active.add(lookup, a);
    return a;
  }
}

const spendLoaded = (a: Applied): boolean => a.spend === 'loaded';

export const budget = definePlugin({
  name: 'budget',
  requires: { plugins: ['auth'] },
  inject: {
    limits: 'WorkspaceLimits',
    cost: 'RequestCost',
    usage: 'UsageStore',
    log: 'Logger',
    ledger: 'BudgetLedger',
    clock: 'Clock',
    config: 'Config',
    providers: 'Providers',
    records: 'RecordQueues',
  },
  enforces: ['budgets'],
  // Tags exist once attribution has run. usage-recorder, listed after, completes first (onComplete runs in
  // reverse), so a request's record is queued before its budget settles: see ActiveBudgets on forgetting.
  order: { after: ['attribution'], before: ['usage-recorder'] },
  create: (_container, _options, { limits, cost, usage, log, ledger, clock, config, providers, records }) => {
    const policy = config.budgets;
    const plugin = new BudgetPlugin({
      limits,
      cost,
      usage,
      log,
      clock,
      pricing: new BudgetPricing(cost.prices, policy.unpriced, providers),
      referencedInput: policy.referenced_input_tokens,
      records,
      policy,
    });
    ledger.attach(plugin);
    return plugin;
  },
});
