import type { BudgetConfig, WorkspaceLimitsService } from '../../api';
import type { Applied } from './active-budgets';
import { DEFAULT_MIN_OUTPUT } from './clamp';
import type { Period } from './periods';

/** The limit-store limit of a soft budget (action: alert): far above any spend, within a signed 64-bit integer. */
const SOFT_LIMIT = 2n ** 62n;

/** A configured budget, with what does not change between requests worked out once. */
export interface Rule {
  config: BudgetConfig;
  limitPico: bigint;
  /** Fixed scope ({} for a workspace-wide budget): tag values, or key_id for a budget on one gateway key. */
  tags: [string, string][];
  /** A budget per value of this dimension (a tag key, or key_id for per_key); other limits for some values. */
  per: string | undefined;
  overrides: ReadonlyMap<string, bigint>;
  /** Its instances are found in the active budgets under this prefix, then workspace (and tag value). */
  id: number;
  /** The budget's id in the admin API: yaml:<workspace>:<index>, or the id a runtime budget was created with. */
  budgetId: string;
  /** Runtime budgets count apart from YAML ones of the same scope, and keep counting when changed. */
  runtime: boolean;
}

/** The budget's identity in the limit store: workspace, scope, period kind and start. */
export function budgetKey(
  limits: WorkspaceLimitsService,
  workspace: string,
  rule: Rule,
  tags: readonly [string, string][],
  period: Period,
): string {
  const scope = tags.map(([k, v]) => limits.tagScope(k, v)).join(':') || 'all';
  const own = rule.runtime ? `rb:${encodeURIComponent(rule.budgetId)}:` : '';
  return `ws:${workspace}:${own}${scope}:${rule.config.period}:${period.startMs}`;
}

/** The set of values (tag values or key ids) a per_tag or per_key budget met in a period. */
export function perValuesKey(workspace: string, rule: Rule, period: Period): string {
  const own = rule.runtime ? `rb:${encodeURIComponent(rule.budgetId)}:` : '';
  return `budget-tags:ws:${workspace}:${own}${rule.per}:${rule.config.period}:${period.startMs}`;
}

/** The limit of the budget instance for these scope values: an override's, or the budget's own. */
function limitOf(rule: Rule, tags: readonly [string, string][]): bigint {
  return rule.per === undefined ? rule.limitPico : (rule.overrides.get(tags[0][1]) ?? rule.limitPico);
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
  const key = budgetKey(limits, workspace, rule, tags, period);
  const limitPico = limitOf(rule, tags);
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
    clampMin: b.action === 'clamp' ? (b.min_output_tokens ?? DEFAULT_MIN_OUTPUT) : undefined,
    // A soft budget is counted like any other, against a limit no request reaches: it never refuses, only alerts.
    check: { key, limitPico: b.action === 'alert' ? SOFT_LIMIT : limitPico, periodEndMs: period.endMs, seedPico },
    status: {
      key,
      id: rule.budgetId,
      source: rule.runtime ? 'runtime' : 'yaml',
      workspace,
      scope: tags.map(([k, v]) => `${k}=${v}`).join(',') || 'workspace',
      period: b.period,
      periodStart: period.startMs,
      periodEnd: period.endMs,
      limitPico,
      alertAt: b.alert_at,
      action: b.action,
      filters,
    },
  };
}
