import type { Bucket, BucketState, BudgetCheck, BudgetState } from '../../contracts/limit-store';

/** Arguments to and answers from the Redis limit store's scripts: checked, formatted and parsed. */

/**
 * Largest pico-USD amount (limit, seed, reservation, cost) accepted: 10^27 - 1 pico, just under 10^15 USD.
 * The scripts keep amounts as two limbs (whole dollars, pico remainder < 10^12), each an exact integer in a
 * Lua double up to 2^53 ≈ 9.0e15; with inputs capped at 10^15 dollars, spent + reserved + amount stays below
 * that, and spent stays exact until settlements push it past 2^53 dollars. INCRBY (64-bit) would have capped
 * budgets at 2^63 pico ≈ 9.2M USD, which a large monthly budget could plausibly approach.
 */
export const BUDGET_MAX_PICO = 10n ** 27n - 1n;

/** The scripts answer spent and reserved of each budget, in the order of the checks. */
export function budgetStates(checks: readonly BudgetCheck[], counters: (string | number)[]): BudgetState[] {
  return checks.map((c, i) => ({
    key: c.key,
    spentPico: BigInt(counters[2 * i]),
    reservedPico: BigInt(counters[2 * i + 1]),
    limitPico: c.limitPico,
  }));
}

/** Same formulas as the memory store, so both report identical states. */
export function bucketState(b: Bucket, tokens: number, allowed: boolean): BucketState {
  const rate = b.limit / b.windowMs;
  return {
    key: b.key,
    limit: b.limit,
    remaining: Math.max(0, Math.floor(tokens)),
    resetMs: Math.ceil((b.limit - tokens) / rate),
    retryAfterMs: tokens >= 1 || allowed ? 0 : Math.ceil((1 - tokens) / rate),
  };
}

export function time(now: number | undefined): string {
  if (now === undefined) return '';
  if (!Number.isFinite(now)) throw new RangeError(`now must be a finite number, got ${now}`);
  return String(now);
}

export function period(periodEndMs: number): string {
  if (!Number.isSafeInteger(periodEndMs)) throw new RangeError(`periodEndMs must be an integer, got ${periodEndMs}`);
  return String(periodEndMs);
}

export function pico(v: bigint, name: string): string {
  if (v < 0n || v > BUDGET_MAX_PICO)
    throw new RangeError(`${name} must be within 0..${BUDGET_MAX_PICO} pico-USD, got ${v}`);
  return v.toString();
}

/** A budget's seed argument: its amount, or `pending` while it is not known (the budget is created at 0, marked). */
export function seed(c: BudgetCheck): string {
  return c.seedPending ? 'pending' : pico(c.seedPico, 'seedPico');
}
