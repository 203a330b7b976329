/**
 * One page of a grouping: the groups ranked by cost, `limit` of them from `offset`, and everything else summed as
 * "other", so that the page's rows plus other always add up to the grouping's total. With an interval a group is
 * ranked by its cost over the whole range, and its rows (one per bucket) are all on the same page. With `search`, only
 * the groups holding it in one of their values (case-insensitive) are paged; every other group still goes to "other".
 */
import { addTotals, zeroTotals } from '../counters';
import type { UsageGroupRow, UsageTotals } from '../store';

export interface GroupPage {
  /** The page's groups, every bucket of each, in the order of the rows given. */
  rows: UsageGroupRow[];
  /** Every group not on the page, summed over the range; null when the page holds them all. */
  other: (UsageTotals & { groups: number }) | null;
  /** Groups in all, on every page (with a search: the groups that match it). */
  groups: number;
  /** Offset of the next page; null on the last. */
  nextOffset: number | null;
}

interface Ranked {
  key: string;
  totals: UsageTotals;
}

/** Most expensive first, then most requests, then by group values: a stable order from one call to the next. */
function compareRanked(a: Ranked, b: Ranked): number {
  if (a.totals.costPico !== b.totals.costPico) return a.totals.costPico > b.totals.costPico ? -1 : 1;
  if (a.totals.requests !== b.totals.requests) return b.totals.requests - a.totals.requests;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export function groupPage(
  rows: readonly UsageGroupRow[],
  groupBy: readonly string[],
  limit: number,
  offset: number,
  search = '',
): GroupPage {
  const keys = rows.map((r) => JSON.stringify(groupBy.map((name) => r.group[name])));
  const byKey = new Map<string, Ranked>();
  rows.forEach((r, i) => {
    let g = byKey.get(keys[i]);
    if (!g) byKey.set(keys[i], (g = { key: keys[i], totals: zeroTotals() }));
    addTotals(g.totals, r);
  });
  const ranked = [...byKey.values()].sort(compareRanked);
  const needle = search.toLowerCase();
  const matching = needle
    ? ranked.filter((g) => (JSON.parse(g.key) as (string | null)[]).some((v) => v?.toLowerCase().includes(needle)))
    : ranked;
  const page = new Set(matching.slice(offset, offset + limit).map((g) => g.key));
  let other: GroupPage['other'] = null;
  for (const g of ranked) {
    if (page.has(g.key)) continue;
    other ??= { ...zeroTotals(), groups: 0 };
    addTotals(other, g.totals);
    other.groups++;
  }
  return {
    rows: rows.filter((_, i) => page.has(keys[i])),
    other,
    groups: matching.length,
    nextOffset: offset + limit < matching.length ? offset + limit : null,
  };
}
