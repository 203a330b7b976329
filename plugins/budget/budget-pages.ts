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
import { periodAt } from './periods';
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
  const found: { a: Applied; at: BudgetCursor }[] = [];
  const wanted = q.limit + 1; // one more than the page: whether a next page exists
  for (const listed of rules) {
    if (found.length >= wanted) break;
    const here = q.after && { workspace: q.after.workspace, id: q.after.id };
    const order = here ? compareToCursor(listed, here) : 1;
    if (order < 0 || (order === 0 && !listed.rule.per)) continue;
    const after = order === 0 ? (q.after!.value ?? undefined) : undefined;
    found.push(...(await instances(limits, listed, reads, { now: q.now, after, limit: wanted - found.length })));
  }
  const page = found.slice(0, q.limit);
  const states = await readLimitStore(() => limits.store.budgetStates(page.map((f) => f.a.check)));
  const statuses = page.map(({ a }, i) => {
    const { spentPico, reservedPico } = states[i];
    return {
      ...a.status,
      spentPico,
      reservedPico,
      alerted: alertReached(spentPico, a.status.limitPico, a.status.alertAt[0]),
    };
  });
  return { statuses, next: found.length > q.limit ? page[page.length - 1].at : null };
}

function compareToCursor(listed: ListedRule, at: { workspace: string; id: string }): number {
  return codePointCompare(listed.workspace, at.workspace) || codePointCompare(listed.rule.budgetId, at.id);
}

/** A budget's instances this period after `after`, at most `limit`, each seeded with the spend recorded. */
async function instances(
  limits: WorkspaceLimitsService,
  { workspace, rule }: ListedRule,
  reads: BudgetReads,
  q: { now: number; after: string | undefined; limit: number },
): Promise<{ a: Applied; at: BudgetCursor }[]> {
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
  return mergeValues(spent, met, q.limit).map(([value, seed]) => ({
    a: describe(limits, workspace, rule, [[tag, value]], period, seed),
    at: { workspace, id, value },
  }));
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
