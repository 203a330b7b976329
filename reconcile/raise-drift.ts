/**
 * A reconciliation's drift past reconcile.drift_alert, stored in the alert outbox: the running gateway delivers it
 * to every channel. Shared by `tollgate reconcile` and the scheduled run.
 */
import { completeAlert, type Alert } from '../alerts/alert';
import type { AlertsConfig } from '../config/alerts';
import type { AlertOutbox } from '../storage/alert-outbox';
import { driftAlert } from './drift-alert';
import type { ReconciliationReport } from './report';

/** The alert raised, or null when no final day drifted past the threshold. */
export async function raiseDrift(
  alerts: AlertsConfig,
  outbox: AlertOutbox | undefined,
  report: ReconciliationReport,
  threshold: string,
  runId: number | null,
): Promise<Alert | null> {
  const input = driftAlert(report, threshold, runId);
  if (!input) return null;
  const now = Date.now();
  const alert = completeAlert(input, now, alerts.dashboard_url);
  if (alerts.channels.length > 0 && outbox)
    await outbox.enqueue(
      { alertId: alert.alert_id, kind: alert.kind, workspace: null, createdAt: now, body: JSON.stringify(alert) },
      alerts.channels.map((c) => c.name),
    );
  return alert;
}
