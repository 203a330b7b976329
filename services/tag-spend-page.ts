import type { BudgetReads, TagSpendQuery } from '../contracts/services';
import { UNTAGGED } from '../records/dimensions';
import { codePointCompare } from '../plugin-kit/code-point-order';

/**
 * One page of a tag's spend: the values after `after` in code-point order, at most `limit`, each with its spend in
 * [from, to). The grouping itself is the store's; run on the admin API's reader thread, the thread asking gets the
 * page alone whatever the number of values.
 */
export async function tagSpendPage(
  queryUsage: BudgetReads['queryUsage'],
  q: TagSpendQuery,
): Promise<[string, bigint][]> {
  const rows = await queryUsage({ from: q.from, to: q.to, groupBy: [q.tag], filters: { workspace: q.workspace } });
  const values: [string, bigint][] = [];
  for (const row of rows) {
    const value = row.group[q.tag];
    if (value === null || value === undefined || value === UNTAGGED) continue;
    if (q.after === undefined || codePointCompare(value, q.after) > 0) values.push([value, row.costPico]);
  }
  return values.sort((x, y) => codePointCompare(x[0], y[0])).slice(0, q.limit);
}

/** Budget reads straight from a usage store (its own thread): when no reader thread is given. */
export function budgetReadsOf(usage: Pick<BudgetReads, 'queryUsage'>): BudgetReads {
  return { queryUsage: (q) => usage.queryUsage(q), tagSpend: (q) => tagSpendPage((u) => usage.queryUsage(u), q) };
}
