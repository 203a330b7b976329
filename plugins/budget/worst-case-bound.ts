/**
 * The most a request can cost, as admission reserves it: a bound in pico-USD, or why there is none (a unit the
 * price does not cover, a field that cannot be read). A budget refuses an unbounded request unless
 * budgets.unpriced is allow (BudgetPricing.reservation).
 */
export type WorstCase = { pico: bigint } | { unbounded: string; param: string | null };

export const bounded = (pico: bigint): WorstCase => ({ pico });

export const unbounded = (reason: string, param: string | null): { unbounded: string; param: string | null } => ({
  unbounded: reason,
  param,
});
