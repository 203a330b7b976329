/**
 * Budget gauges: spent, limit and end-of-period forecast of each budget, read when Prometheus scrapes from the same
 * list as GET /api/budgets (the spend through the admin API's reader thread, the forecast from the burn samples the
 * alerts already keep). Per-tag budgets may number thousands, so only the metrics.budgets_max budgets closest to
 * their limit are exported. A scrape whose read fails keeps the values of the last one that succeeded.
 */
import { Gauge, type Registry } from 'prom-client';
import type { BudgetStatus } from '../../contracts/services';

const LABELS = ['workspace', 'scope', 'period'];
const usd = (pico: bigint) => Number(pico) / 1e12;

export interface BudgetReadings {
  /** Every budget in its current period (the budget ledger). */
  list(now: number): Promise<BudgetStatus[]>;
  /** The projected spend at the end of the period; null while there is no burn to project from. */
  forecastPico(b: BudgetStatus, now: number): bigint | null;
}

export function watchBudgets(registry: Registry, readings: BudgetReadings, budgetsMax: number): void {
  // One read serves the three gauges of a scrape. Several workers read the same budgets from the limit store: the
  // largest of their values, never their sum.
  let reading: Promise<void> | undefined;
  const once = () => (reading ??= read().finally(() => (reading = undefined)));
  const gauge = (name: string, help: string) =>
    new Gauge({ name, help, labelNames: LABELS, registers: [registry], aggregator: 'max', collect: once });
  const spent = gauge('tollgate_budget_spent_usd', 'Spend counted against a budget in its current period, in USD.');
  const limit = gauge('tollgate_budget_limit_usd', "A budget's limit for its period, in USD.");
  const forecast = gauge(
    'tollgate_budget_forecast_usd',
    'Spend projected at the end of the period from the recent burn rate, in USD (absent until there is a burn).',
  );
  async function read(): Promise<void> {
    const now = Date.now();
    let list: BudgetStatus[];
    try {
      list = await readings.list(now);
    } catch {
      return; // the store is unreachable: the last values stay, tollgate_store_* tell why
    }
    const closest = list
      .map((b) => ({ b, share: b.limitPico === 0n ? Infinity : usd(b.spentPico) / usd(b.limitPico) }))
      .sort((x, y) => y.share - x.share)
      .slice(0, budgetsMax);
    for (const g of [spent, limit, forecast]) g.reset();
    for (const { b } of closest) {
      const labels = { workspace: b.workspace, scope: b.scope, period: b.period };
      spent.set(labels, usd(b.spentPico));
      limit.set(labels, usd(b.limitPico));
      const projected = readings.forecastPico(b, now);
      if (projected !== null) forecast.set(labels, usd(projected));
    }
  }
}
