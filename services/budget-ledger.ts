import type { BudgetCursor, BudgetLedgerService, BudgetReads, BudgetSource, BudgetStatus } from '../contracts/services';

export type { BudgetCursor, BudgetReads, BudgetSource, BudgetStatus };

/**
 * Budgets read at a time when every one is wanted (alerts, metrics): each page is a turn of the event loop, and costs
 * the reader thread one grouping of a per-tag budget's spend, so pages are large.
 */
const LIST_PAGE = 5000;

/**
 * Where the admin API (GET /api/budgets) reads the budgets from. The budget plugin attaches itself when it is in
 * the pipeline; without it no budget is enforced and the list is empty.
 */
export class BudgetLedger implements BudgetLedgerService {
  private source: BudgetSource | undefined;

  attach(source: BudgetSource): void {
    this.source = source;
  }

  /** A page in listing order (workspace, budget id, tag value), and the cursor of the next one. */
  async page(now: number, reads: BudgetReads | undefined, after: BudgetCursor | undefined, limit: number) {
    if (!this.source) return { statuses: [] as BudgetStatus[], next: null };
    return this.source.page(now, reads, after, limit);
  }

  /** Every budget in listing order, read page by page. */
  async list(now = Date.now(), reads?: BudgetReads): Promise<BudgetStatus[]> {
    const all: BudgetStatus[] = [];
    let after: BudgetCursor | undefined;
    do {
      const { statuses, next } = await this.page(now, reads, after, LIST_PAGE);
      all.push(...statuses);
      after = next ?? undefined;
    } while (after);
    return all;
  }
}
