/**
 * GET /api/budgets page by page, in key order: with per-tag budgets there is one budget per tag value met this
 * period, which may be many. The spend each shows is read on the admin API's reader thread.
 */
import type { AlertService } from '../alerts/service';
import { forecastPart } from '../alerts/budget-alerts';
import { formatUsd } from '../pricing/money';
import type { BudgetLedger } from '../services/budget-ledger';
import { decodePageCursor, encodePageCursor } from './page-cursor';
import type { AdminReads } from './reads/admin-reads';

const isKey = (v: unknown): v is string => typeof v === 'string';

export async function budgetListPage(
  budgets: BudgetLedger,
  reads: AdminReads,
  q: { limit: number; cursor: string | null },
  now = Date.now(),
  forecasts?: Pick<AlertService, 'forecastOf'>,
) {
  const after = q.cursor === null ? undefined : decodePageCursor(q.cursor, isKey);
  const all = await budgets.list(now, reads);
  const from = after === undefined ? 0 : all.findIndex((b) => b.key > after);
  const page = from < 0 ? [] : all.slice(from, from + q.limit);
  const more = from >= 0 && from + q.limit < all.length;
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
    next_cursor: more ? encodePageCursor(page[page.length - 1].key) : null,
  };
}
