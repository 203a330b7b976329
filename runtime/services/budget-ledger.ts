import type { BudgetLedgerService, BudgetSource, BudgetStatus } from '../../core/services';

export type { BudgetSource, BudgetStatus };

/**
 * Where the admin API (GET /api/budgets) reads the budgets from. The budget plugin attaches itself when it is in
 * the pipeline; without it no budget is enforced and the list is empty.
 */
export class BudgetLedger implements BudgetLedgerService {
  private source: BudgetSource | undefined;

  attach(source: BudgetSource): void {
    this.source = source;
  }

  async list(now = Date.now()): Promise<BudgetStatus[]> {
    const statuses = this.source ? await this.source.statuses(now) : [];
    return statuses.sort((a, b) => a.key.localeCompare(b.key));
  }
}
