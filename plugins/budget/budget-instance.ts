import type { BudgetConfig, WorkspaceLimitsService } from '../../api';
import type { Applied } from './active-budgets';
import type { Period } from './periods';

/** The limit-store limit of a soft budget (action: alert): far above any spend, within a signed 64-bit integer. */
const SOFT_LIMIT = 2n ** 62n;

/** A configured budget, with what does not change between requests worked out once. */
export interface Rule {
  config: BudgetConfig;
  limitPico: bigint;
  /** Fixed tag filter ({} for a workspace-wide budget). */
  tags: [string, string][];
  /** Its instances are found in the active budgets under this prefix, then workspace (and tag value). */
  id: number;
}

/** The budget's identity in the limit store: workspace, scope, period kind and start. */
export function budgetKey(
  limits: WorkspaceLimitsService,
  workspace: string,
  b: BudgetConfig,
  tags: readonly [string, string][],
  period: Period,
): string {
  return `ws:${workspace}:${tags.map(([k, v]) => limits.tagScope(k, v)).join(':') || 'all'}:${b.period}:${period.startMs}`;
}

/** The set of tag values a per_tag budget met in a period. */
export function tagValuesKey(workspace: string, b: BudgetConfig, period: Period): string {
  return `budget-tags:ws:${workspace}:${b.per_tag}:${b.period}:${period.startMs}`;
}

export function describe(
  limits: WorkspaceLimitsService,
  workspace: string,
  rule: Rule,
  tags: readonly [string, string][],
  period: Period,
  seedPico: bigint,
): Applied {
  const b = rule.config;
  const key = budgetKey(limits, workspace, b, tags, period);
  const filters = { workspace, ...Object.fromEntries(tags) };
  let readEnded: (() => void) | undefined;
  const firstRead = new Promise<void>((resolve) => (readEnded = resolve));
  return {
    filters,
    since: period.endMs,
    spend: 'loading',
    firstRead,
    readEnded,
    countedUnseeded: false,
    open: 0,
    settledAt: 0,
    // A soft budget is counted like any other, against a limit no request reaches: it never refuses, only alerts.
    check: { key, limitPico: b.action === 'alert' ? SOFT_LIMIT : rule.limitPico, periodEndMs: period.endMs, seedPico },
    status: {
      key,
      workspace,
      scope: tags.map(([k, v]) => `${k}=${v}`).join(',') || 'workspace',
      period: b.period,
      periodStart: period.startMs,
      periodEnd: period.endMs,
      limitPico: rule.limitPico,
      alertAt: b.alert_at,
      action: b.action,
      filters,
    },
  };
}
