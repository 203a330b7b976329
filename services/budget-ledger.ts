import type { BudgetLedgerService, BudgetSource, BudgetStatus, UsageStoreService } from '../contracts/services';

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

  /** By key, in code-unit order (the admin API's cursor compares keys the same way). */
  async list(now = Date.now(), usage?: Pick<UsageStoreService, 'queryUsage'>): Promise<BudgetStatus[]> {
    const statuses = this.source ? await this.source.statuses(now, usage) : [];
    return statuses.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
