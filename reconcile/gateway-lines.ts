/**
 * The gateway's side of a reconciliation: its recorded usage of one provider per UTC day x served model (and
 * workspace, where the reconcile config maps a provider's project or workspace to one), read with the same query
 * the usage reports use (the daily rollups, not the records).
 */
import type { PicoUsd } from '../records/usage-record';
import type { UsageGroupRow, UsageQuery } from '../storage/store';
import { utcDay, type BillTokens, type ReaderRange } from './bill';

export interface GatewayLine {
  day: string;
  model: string | null;
  scope: string | null;
  requests: number;
  tokens: BillTokens;
  costPico: PicoUsd;
  /** The cost at the list price, before pricing.discounts (storage/list-cost.ts). */
  listCostPico: PicoUsd;
  unpriced: number;
  estimated: number;
}

/** The usage query of a run: per day and served model, per workspace when some scope is mapped. */
export function gatewayQuery(provider: string, range: ReaderRange, byWorkspace: boolean): UsageQuery {
  return {
    from: range.from,
    to: range.to,
    filters: { provider },
    groupBy: byWorkspace ? ['model', 'workspace'] : ['model'],
    interval: 'day',
  };
}

/** Rows of gatewayQuery as lines; a workspace no scope maps to counts as unscoped. */
export function gatewayLines(rows: readonly UsageGroupRow[], mappedWorkspaces: ReadonlySet<string>): GatewayLine[] {
  return rows.map((r) => {
    const workspace = r.group.workspace ?? null;
    return {
      day: utcDay(r.bucket ?? 0),
      model: r.group.model ?? null,
      scope: workspace !== null && mappedWorkspaces.has(workspace) ? workspace : null,
      requests: r.requests,
      tokens: {
        input: r.inputTokens,
        cacheRead: r.cacheReadTokens,
        cacheWrite: r.cacheWriteTokens + r.cacheWrite1hTokens,
        output: r.outputTokens,
      },
      costPico: r.costPico,
      listCostPico: r.costPico + r.discountPico,
      unpriced: r.unknownCostCount,
      estimated: r.estimatedCount,
    };
  });
}
