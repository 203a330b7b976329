/**
 * The budget alerts: a threshold of alert_at reached, and a forecast that crosses the limit. Each is keyed by the
 * budget's key (which names its period) and what fired, so it is raised, stored and sent once per period.
 */
import type { BudgetStatus } from '../contracts/services';
import { alertReached } from '../plugins/budget/alert';
import { PERIOD_ADJECTIVE } from '../plugins/budget/refusals';
import { formatUsd } from '../pricing/money';
import type { AlertBudget, AlertForecast, AlertInput } from './alert';
import { forecastSentence, usdText } from './alert-text';
import type { Forecast } from './forecast';

export function budgetPart(b: BudgetStatus): AlertBudget {
  return {
    scope: b.scope,
    period: b.period,
    period_start: new Date(b.periodStart).toISOString(),
    period_end: new Date(b.periodEnd).toISOString(),
    limit_usd: formatUsd(b.limitPico),
    action: b.action,
  };
}

export function forecastPart(f: Forecast | null): AlertForecast | null {
  if (!f) return null;
  return {
    projected_usd: formatUsd(f.projectedPico),
    limit_reached_at: f.limitReachedAt === null ? null : new Date(f.limitReachedAt).toISOString(),
    window_ms: f.windowMs,
  };
}

function named(b: BudgetStatus): string {
  const scope = b.scope === 'workspace' ? '' : ` (${b.scope})`;
  return `the ${PERIOD_ADJECTIVE[b.period]} budget of workspace ${b.workspace}${scope}`;
}

function consequence(b: BudgetStatus): string {
  if (b.action === 'alert') return 'It is a soft budget: requests are not refused.';
  if (b.action === 'clamp')
    return 'Requests that do not fit have their output-token limit lowered to what is left, or are refused with 429 budget_exceeded.';
  return 'Requests that do not fit are refused with 429 budget_exceeded.';
}

/** The thresholds this budget's spend has reached, lowest first, each as an alert. */
export function thresholdAlerts(b: BudgetStatus, forecast: Forecast | null): AlertInput[] {
  return b.alertAt
    .filter((share) => alertReached(b.spentPico, b.limitPico, share))
    .map((share) => {
      const percent = `${Math.round(share * 1000) / 10}%`;
      const budget = budgetPart(b);
      const projected = forecastPart(forecast);
      return {
        kind: 'budget.threshold',
        key: `${b.key}:${share}`,
        workspace: b.workspace,
        scope: b.scope,
        title: `Budget ${percent} used: ${usdText(b.spentPico)} of ${usdText(b.limitPico)}`,
        summary:
          `${capital(named(b))} reached ${percent} of its limit: ${usdText(b.spentPico)} of ${usdText(b.limitPico)} spent. ${share >= 1 ? consequence(b) : ''} ${projected && b.spentPico < b.limitPico ? forecastSentence(projected, budget) : ''}`
            .replace(/\s+/g, ' ')
            .trim(),
        budget,
        spend_usd: formatUsd(b.spentPico),
        threshold: share,
        rule: `alert_at ${share}`,
        forecast: projected,
        view: '#/usage',
      };
    });
}

/** The forecast alert, when the projected spend crosses a limit not reached yet. */
export function forecastAlert(b: BudgetStatus, f: Forecast | null): AlertInput | undefined {
  if (!f || b.spentPico >= b.limitPico || f.projectedPico < b.limitPico) return undefined;
  const budget = budgetPart(b);
  const projected = forecastPart(f)!;
  return {
    kind: 'budget.forecast',
    key: b.key,
    workspace: b.workspace,
    scope: b.scope,
    title: `Budget forecast: ${usdText(f.projectedPico)} of ${usdText(b.limitPico)} by the end of the period`,
    summary: `${capital(named(b))} has ${usdText(b.spentPico)} spent so far. ${forecastSentence(projected, budget)}`,
    budget,
    spend_usd: formatUsd(b.spentPico),
    threshold: null,
    rule: 'forecast',
    forecast: projected,
    view: '#/usage',
  };
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
