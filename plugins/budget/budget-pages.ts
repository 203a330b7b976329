import {
  codePointCompare,
  type BudgetCursor,
  type BudgetReads,
  type BudgetStatus,
  type WorkspaceLimitsService,
} from '../../api';
import type { Applied } from './active-budgets';
import { alertReached } from './alert';
import { describe, perValuesKey, type Rule } from './budget-instance';
import { periodAt, type Period } from './periods';
import { readLimitStore } from './refusals';

/** A configured budget and its workspace: the unit the listing orders by. */
export interface ListedRule {
  workspace: string;
  rule: Rule;
}

/** Budgets in listing order: workspace, then budget id (code-point order). */
export function listingOrder(x: ListedRule, y: ListedRule): number {
  return codePointCompare(x.workspace, y.workspace) || codePointCompare(x.rule.budgetId, y.rule.budgetId);
}

/**
 * One page of GET /api/budgets, its work bounded by the page: a per-tag budget's values come a page at a time from
 * the spend recorded (grouped on the admin API's reader thread) merged with the values the limit store met this
 * period (a sorted set, read from the cursor on), and only the page's counters are read from the limit store.
 */
export async function budgetPage(
  limits: WorkspaceLimitsService,
  rules: readonly ListedRule[],
  reads: BudgetReads,
  q: { now: number; after: BudgetCursor | undefined; limit: number },
): Promise<{ statuses: BudgetStatus[]; next: BudgetCursor | null }> {
  const found: Found[] = [];
  const wanted = q.limit + 1; // one more than the page: whether a next page exists
  for (const listed of rules) {
    if (found.length >= wanted) break;
    const here = q.after && { workspace: q.after.workspace, id: q.after.id };
    const order = here ? compareToCursor(listed, here) : 1;
    // A cursor on a budget with no value (a whole-workspace budget, or a per-tag one that has none yet) is past it.
    if (order < 0 || (order === 0 && (!listed.rule.per || q.after!.value === null))) continue;
    const after = order === 0 ? (q.after!.value ?? undefined) : undefined;
    found.push(...(await instances(limits, listed, reads, { now: q.now, after, limit: wanted - found.length })));
  }
  const page = found.slice(0, q.limit);
  const counted = page.flatMap((f) => ('a' in f ? [f.a] : []));
  const states = await readLimitStore(() => limits.store.budgetStates(counted.map((a) => a.check)));
  let i = 0;
  const statuses = page.map((f): BudgetStatus => {
    if (!('a' in f)) return f.status;
    const { spentPico, reservedPico } = states[i++];
    return {
      ...f.a.status,
      spentPico,
      reservedPico,
      alerted: alertReached(spentPico, f.a.status.limitPico, f.a.status.alertAt[0]),
    };
  });
  return { statuses, next: found.length > q.limit ? page[page.length - 1].at : null };
}

/** A page entry: a budget instance, whose counter the limit store holds, or a per-tag budget with no value yet. */
type Found = { a: Applied; at: BudgetCursor } | { status: BudgetStatus; at: BudgetCursor };

function compareToCursor(listed: ListedRule, at: { workspace: string; id: string }): number {
  return codePointCompare(listed.workspace, at.workspace) || codePointCompare(listed.rule.budgetId, at.id);
}

/** A budget's instances this period after `after`, at most `limit`, each seeded with the spend recorded. */
async function instances(
  limits: WorkspaceLimitsService,
  { workspace, rule }: ListedRule,
  reads: BudgetReads,
  q: { now: number; after: string | undefined; limit: number },
): Promise<Found[]> {
  const period = periodAt(rule.config.period, q.now);
  const range = { from: period.startMs, to: q.now + 1 };
  const id = rule.budgetId;
  if (!rule.per) {
    const filters = { workspace, ...Object.fromEntries(rule.tags) };
    const [total] = await reads.queryUsage({ ...range, groupBy: [], filters });
    const a = describe(limits, workspace, rule, rule.tags, period, total?.costPico ?? 0n);
    return [{ a, at: { workspace, id, value: null } }];
  }
  const tag = rule.per;
  const [spent, met] = await Promise.all([
    reads.tagSpend({ ...range, workspace, tag, after: q.after, limit: q.limit }),
    readLimitStore(() => limits.store.setRange(perValuesKey(workspace, rule, period), q.after, q.limit)),
  ]);
  const values = mergeValues(spent, met, q.limit);
  if (values.length === 0 && q.after === undefined)
    return [{ status: noValueYet(workspace, rule, period), at: { workspace, id, value: null } }];
  return values.map(([value, seed]) => ({
    a: describe(limits, workspace, rule, [[tag, value]], period, seed),
    at: { workspace, id, value },
  }));
}

/**
 * A per-tag (or per-key) budget no value has spent under or met this period: listed once, so that a budget just
 * made is seen, at zero spend with its own limit. Its scope, "<tag>=*", stands for every value; no counter is read.
 */
function noValueYet(workspace: string, rule: Rule, period: Period): BudgetStatus {
  const b = rule.config;
  return {
    key: perValuesKey(workspace, rule, period),
    id: rule.budgetId,
    source: rule.runtime ? 'runtime' : 'yaml',
    workspace,
    scope: `${rule.per}=*`,
    period: b.period,
    periodStart: period.startMs,
    periodEnd: period.endMs,
    limitPico: rule.limitPico,
    spentPico: 0n,
    reservedPico: 0n,
    alertAt: b.alert_at,
    alerted: false,
    action: b.action,
    filters: { workspace },
  };
}

/**
 * The first `limit` values of both sorted pages, each once, with the spend recorded (0 for a value only the limit
 * store met). Each page holds its source's first `limit` values: none of the merged first `limit` is missing.
 */
function mergeValues(spent: [string, bigint][], met: string[], limit: number): [string, bigint][] {
  const out: [string, bigint][] = [];
  let i = 0;
  let j = 0;
  while (out.length < limit && (i < spent.length || j < met.length)) {
    const order = i >= spent.length ? 1 : j >= met.length ? -1 : codePointCompare(spent[i][0], met[j]);
    if (order <= 0) out.push(spent[i++]);
    else out.push([met[j++], 0n]);
    if (order === 0) j++;
  }
  return out;
}
