/**
 * Reconciliation gauges: each provider's drift against its bill, from its newest successful run (reconcile/, run by
 * the schedule or `tollgate reconcile`), and when that run finished. Read when Prometheus scrapes, through the admin
 * API's reader thread. The provider label takes only the gateway's provider slugs (others are "other"), so the
 * series stay bounded. A scrape whose read fails keeps the values of the last one that succeeded.
 */
import { Gauge, type Registry } from 'prom-client';
import { OTHER } from './bounded-labels';

export interface ReconciliationReading {
  provider: string;
  /** The run's drift over its final days (a decimal share); null when none of its days was final. */
  drift: string | null;
  finishedAt: number;
}

export function watchReconciliation(
  registry: Registry,
  read: () => Promise<ReconciliationReading[]>,
  providers: readonly string[],
): void {
  const known = new Set(providers);
  let reading: Promise<void> | undefined;
  const once = () => (reading ??= refresh().finally(() => (reading = undefined)));
  const gauge = (name: string, help: string) =>
    new Gauge({ name, help, labelNames: ['provider'], registers: [registry], aggregator: 'max', collect: once });
  const drift = gauge(
    'tollgate_reconciliation_drift',
    "|provider - gateway| / provider over the final days of the provider's newest successful reconciliation (0.05 = 5%).",
  );
  const finished = gauge(
    'tollgate_reconciliation_last_success_timestamp_seconds',
    "When the provider's newest successful reconciliation finished (Unix seconds).",
  );
  async function refresh(): Promise<void> {
    let rows: ReconciliationReading[];
    try {
      rows = await read();
    } catch {
      return; // the store is unreachable: the last values stay
    }
    drift.reset();
    finished.reset();
    for (const r of rows) {
      const provider = known.has(r.provider) ? r.provider : OTHER;
      finished.set({ provider }, r.finishedAt / 1000);
      if (r.drift !== null) drift.set({ provider }, Number(r.drift));
    }
  }
}
