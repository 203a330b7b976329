/**
 * A group's cost at the list price, from its rollup counters: its known cost plus the discount (list less effective
 * cost) of its records that have a list cost. A record priced before records kept a list cost (migration 022) and
 * not repriced since has none: it counts at its cost, since nothing says what discount it had, and
 * listCostUnknownCount says how many such records a group holds (0: the list cost is exact). `tollgate usage reprice`
 * gives them their list cost exactly, from their stored counts.
 */
import { knownCost } from './counters';
import type { UsageTotals } from './store';

/** The group's list cost, or null when its cost is unknown (never shown as $0). */
export function knownListCost(t: UsageTotals): bigint | null {
  const cost = knownCost(t);
  return cost === null ? null : cost + t.discountPico;
}

/** Records with a cost and no list cost (priced before migration 022): counted in the list cost at their cost. */
export function listCostUnknownCount(t: UsageTotals): number {
  return Math.max(0, t.requests - t.unknownCostCount - t.notCountedCount - t.listCostCount);
}
