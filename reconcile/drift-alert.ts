/**
 * The alert a reconciliation raises when a final day drifted past reconcile.drift_alert: one per provider and day
 * (raised again, the same day is the same alert, sent once), through the alert outbox like every other alert.
 */
import type { AlertInput } from '../alerts/alert';
import { ppmOf } from './ratio';
import type { ReconciliationReport } from './report';

export const DRIFT_ALERT_KIND = 'reconciliation.drift';

/** The alert for the report's worst day, or null when no final day drifted past `threshold` (a decimal share). */
export function driftAlert(report: ReconciliationReport, threshold: string, runId: number | null): AlertInput | null {
  const worst = report.worst_day;
  if (!worst || ppmOf(worst.drift) <= ppmOf(threshold)) return null;
  const percent = (Number(worst.drift) * 100).toFixed(2);
  return {
    kind: DRIFT_ALERT_KIND,
    key: `${report.provider}/${worst.day}`,
    workspace: null,
    scope: `provider=${report.provider}`,
    title: `${report.provider} bill differs from recorded spend by ${percent}% on ${worst.day}`,
    summary: `Reconciling ${report.from} to ${report.to}: the provider billed $${report.totals.provider_usd} against $${report.totals.gateway_usd} recorded. Each line's status says where the difference comes from.`,
    threshold: Number(threshold),
    view: runId === null ? '#/reconciliation' : `#/reconciliation/${runId}`,
    fields: {
      provider: report.provider,
      day: worst.day,
      drift: worst.drift,
      ...(report.discount ? { discount: report.discount.multiplier } : {}),
    },
  };
}
