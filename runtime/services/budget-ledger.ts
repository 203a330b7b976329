import type { BudgetConfig } from '../../config/limits';

/** The state of one budget in its current period, for the admin API and the alert log. Money in pico-USD. */
export interface BudgetStatus {
  key: string;
  workspace: string;
  /** "workspace" or the tag filter, e.g. "customer_id=acme". */
  scope: string;
  period: BudgetConfig['period'];
  periodStart: number;
  periodEnd: number;
  limitPico: bigint;
  spentPico: bigint;
  reservedPico: bigint;
  alertAt: number;
  /** True once spent reached alertAt x limit in this period. */
  alerted: boolean;
}

/** Whatever can list the budgets: the budget plugin, reading the limit store (Redis when configured). */
export interface BudgetSource {
  statuses(now: number): Promise<BudgetStatus[]>;
}

/**
 * Where the admin API (GET /api/budgets) reads the budgets from. The budget plugin attaches itself when it is in
 * the pipeline; without it no budget is enforced and the list is empty.
 */
export class BudgetLedger {
  private source: BudgetSource | undefined;

  attach(source: BudgetSource): void {
    this.source = source;
  }

  async list(now = Date.now()): Promise<BudgetStatus[]> {
    const statuses = this.source ? await this.source.statuses(now) : [];
    return statuses.sort((a, b) => a.key.localeCompare(b.key));
  }
}

/** True when spent reached alertAt x limit (alertAt in thousandths, as configured to at most 3 decimals). */
export function alertReached(spentPico: bigint, limitPico: bigint, alertAt: number): boolean {
  return spentPico * 1000n >= limitPico * BigInt(Math.round(alertAt * 1000));
}
