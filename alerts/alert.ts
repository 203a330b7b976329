/**
 * An alert as every channel receives it: what fired, where, and enough to act on without opening the gateway.
 * Any part of the gateway raises one through AlertService.raise with a kind, a scope and its own fields; budget
 * alerts (./budget-alerts.ts) fill the budget, spend, threshold and forecast parts. It never holds a key, a token
 * or a channel's URL: only names, amounts and times.
 */
import { createHash } from 'node:crypto';

export interface AlertBudget {
  scope: string;
  period: 'day' | 'month';
  period_start: string;
  period_end: string;
  limit_usd: string;
  /** block: requests that do not fit are refused; alert: a soft budget that only alerts. */
  action: 'block' | 'alert' | 'clamp';
}

export interface AlertForecast {
  /** The spend projected at the end of the period at the burn rate of the trailing window. */
  projected_usd: string;
  /** When the spend reaches the limit at that rate (ISO time); null when not within the period. */
  limit_reached_at: string | null;
  window_ms: number;
}

export interface Alert {
  /** Stable: the same condition in the same period always has the same id (receivers may de-duplicate on it). */
  alert_id: string;
  /** What fired: budget.threshold, budget.forecast, test, or another part's own kind. */
  kind: string;
  created_at: string;
  workspace: string | null;
  /** "workspace", a tag filter such as "customer_id=acme", or the raising part's own scope. */
  scope: string;
  /** One line for a notification. */
  title: string;
  /** A sentence or two saying what happened and what it means. */
  summary: string;
  budget: AlertBudget | null;
  spend_usd: string | null;
  /** The threshold that fired, a share of the limit (budget.threshold). */
  threshold: number | null;
  /** The rule that fired, for alerts that come from a rule (e.g. forecast, or an anomaly rule's name). */
  rule: string | null;
  forecast: AlertForecast | null;
  /** The dashboard view to look at (alerts.dashboard_url); null when not configured. */
  dashboard_url: string | null;
  /** Further named values the raising part adds (shown as fields in Slack). */
  fields: Record<string, string>;
}

/** What a part of the gateway gives to raise an alert; the service adds the id, the time and the link. */
export type AlertInput = Omit<
  Alert,
  'alert_id' | 'created_at' | 'dashboard_url' | 'budget' | 'spend_usd' | 'threshold' | 'rule' | 'forecast' | 'fields'
> &
  Partial<Pick<Alert, 'budget' | 'spend_usd' | 'threshold' | 'rule' | 'forecast' | 'fields'>> & {
    /** Names the condition, unique per kind: raised again with the same key, it is the same alert (sent once). */
    key: string;
    /** The dashboard view, a path and query relative to alerts.dashboard_url (e.g. "#/budgets"). */
    view?: string;
  };

export function alertIdOf(kind: string, key: string): string {
  return createHash('sha256').update(`${kind}\u0000${key}`).digest('hex').slice(0, 32);
}

export function completeAlert(input: AlertInput, now: number, dashboardUrl: string | undefined): Alert {
  const { key, view, ...rest } = input;
  return {
    alert_id: alertIdOf(input.kind, key),
    created_at: new Date(now).toISOString(),
    budget: null,
    spend_usd: null,
    threshold: null,
    rule: null,
    forecast: null,
    fields: {},
    ...rest,
    dashboard_url: dashboardUrl === undefined ? null : new URL(view ?? '', dashboardUrl).toString(),
  };
}
