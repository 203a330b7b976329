/**
 * GET /api/budgets page by page, by workspace, budget id and tag value: with per-tag budgets there is one budget per
 * tag value met this period, which may be many. The spend each shows is grouped and paged on the admin API's reader
 * thread; this thread handles the page alone (plugins/budget/budget-pages.ts).
 */
import type { AlertService } from '../alerts/service';
import { forecastPart } from '../alerts/budget-alerts';
import { formatUsd } from '../pricing/money';
import type { BudgetCursor, BudgetLedger } from '../services/budget-ledger';
import { decodePageCursor, encodePageCursor } from './page-cursor';
import type { AdminReads } from './reads/admin-reads';

const isText = (v: unknown): v is string => typeof v === 'string';
const isCursor = (v: unknown): v is BudgetCursor => {
  const c = v as Partial<BudgetCursor> | null;
  return (
    typeof c === 'object' && c !== null && isText(c.workspace) && isText(c.id) && (c.value === null || isText(c.value))
  );
};

export async function budgetListPage(
  budgets: BudgetLedger,
  reads: AdminReads,
  q: { limit: number; cursor: string | null },
  now = Date.now(),
  forecasts?: Pick<AlertService, 'forecastOf'>,
) {
  const after = q.cursor === null ? undefined : decodePageCursor(q.cursor, isCursor);
  const { statuses: page, next } = await budgets.page(now, reads, after, q.limit);
  return {
    data: page.map((b) => ({
      id: b.id,
      source: b.source,
      workspace: b.workspace,
      scope: b.scope,
      period: b.period,
      period_start: new Date(b.periodStart).toISOString(),
      period_end: new Date(b.periodEnd).toISOString(),
      limit_usd: formatUsd(b.limitPico),
      spent_usd: formatUsd(b.spentPico),
      reserved_usd: formatUsd(b.reservedPico),
      used_share: Number((b.spentPico * 10_000n) / (b.limitPico === 0n ? 1n : b.limitPico)) / 10_000,
      alert_at: b.alertAt,
      alerted: b.alerted,
      action: b.action,
      forecast: forecastPart(forecasts?.forecastOf(b, now) ?? null),
    })),
    next_cursor: next && encodePageCursor(next),
  };
}
