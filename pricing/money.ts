/**
 * Exact money. All amounts are integer pico-USD (1e-12 USD, core/usage.ts PicoUsd) carried as bigint.
 *
 * Rates: a catalog price P (decimal string, USD per 1M tokens) is P x 10^12 / 10^6 = P x 10^6 pico-USD per
 * token. For every price with at most 6 decimals (all bundled prices) that is an integer, so
 * cost = sum(tokens x rate) is plain bigint arithmetic with no rounding at all ("2.5" -> 2_500_000n,
 * "0.003625" -> 3_625n). A price with more decimals keeps the extra digits as a power-of-ten denominator
 * (Rate.scale), and a cost is accumulated exactly as a rational in ExactSum.
 *
 * Rounding rule: only ExactSum.toPico(), parseUsd() and formatUsd(x, decimals) round, each once, at the
 * very end, half away from zero, to the unit they return. Nothing rounds intermediate values.
 */
import type { PicoUsd } from '../records/usage-record';
import { formatDecimal, normalize, parseDecimal, pow10, subDecimal, type Scaled } from './decimal';

/** An exact non-negative rate: num / 10^scale pico-USD per unit (per token, per request or per query). */
export interface Rate {
  readonly num: bigint;
  readonly scale: number;
}

/** value x 10^shift as a normalised Rate. */
function scaledRate(text: string, shift: number): Rate {
  const v = parseDecimal(text);
  if (v.coef < 0n) throw new RangeError(`negative price: ${text}`);
  const scale = v.scale - shift;
  const r = normalize(scale >= 0 ? { coef: v.coef, scale } : { coef: v.coef * pow10(-scale), scale: 0 });
  return { num: r.coef, scale: r.scale };
}

/** A USD-per-1M-tokens price as a per-token rate in pico-USD ("2.5" -> {num: 2_500_000n, scale: 0}). */
export function rateFromPerMillion(price: string): Rate {
  return scaledRate(price, 6);
}

/** A USD amount charged per unit (request fee, search-query fee) as a pico-USD rate ("0.005" -> 5_000_000_000n). */
export function rateFromUsd(usd: string): Rate {
  return scaledRate(usd, 12);
}

/**
 * A USD-per-1M price as an integer pico-USD-per-token rate. Throws for a price with more than 6 decimals,
 * whose rate is fractional; use rateFromPerMillion for those.
 */
export function picoPerToken(price: string): bigint {
  const r = rateFromPerMillion(price);
  if (r.scale !== 0) throw new RangeError(`price ${price} has more than 6 decimals: its rate is fractional pico-USD`);
  return r.num;
}

/** Rounds coef / 10^scale to an integer, half away from zero. */
export function roundScaled(v: Scaled): bigint {
  return v.scale === 0 ? v.coef : roundQuotient(v.coef, pow10(v.scale));
}

/** An exact running total of units x rate; the only rounding is toPico(). */
export class ExactSum {
  private num = 0n;
  private scale = 0;

  add(units: bigint, rate: Rate): this {
    if (rate.scale > this.scale) {
      this.num *= pow10(rate.scale - this.scale);
      this.scale = rate.scale;
    }
    this.num += units * rate.num * pow10(this.scale - rate.scale);
    return this;
  }

  /** The exact total in pico-USD as num / 10^scale. */
  exact(): Scaled {
    return normalize({ coef: this.num, scale: this.scale });
  }

  /** The total rounded once to whole pico-USD (a no-op for rates with at most 6 decimals). */
  toPico(): PicoUsd {
    return roundScaled(this.exact());
  }

  /**
   * The total before a discount every rate of it was multiplied by (1 - discount, exactly: pricing/entry-prices.ts),
   * rounded once like toPico: total / (1 - discount) is the exact list-rate total, a terminating decimal.
   */
  undiscountedPico(discount: string): PicoUsd {
    const factor = keptFactor(discount);
    const v = this.exact();
    return roundQuotient(v.coef * pow10(factor.scale), factor.coef * pow10(v.scale));
  }
}

/** 1 - discount, per discount string: the configured discounts are few, and a discounted request needs its own. */
const factors = new Map<string, Scaled>();
function keptFactor(discount: string): Scaled {
  let f = factors.get(discount);
  if (f === undefined) factors.set(discount, (f = parseDecimal(subDecimal('1', discount))));
  return f;
}

/** n / d rounded to an integer half away from zero (d > 0). */
function roundQuotient(n: bigint, d: bigint): bigint {
  const abs = n < 0n ? -n : n;
  let q = abs / d;
  if ((abs % d) * 2n >= d) q += 1n;
  return n < 0n ? -q : q;
}

/**
 * A USD decimal string as pico-USD ("0.0125" -> 12_500_000_000n). Accepts the exponent form a JSON number
 * prints as ("1.5e-7"). Digits beyond 12 decimals are rounded half away from zero (the one rounding).
 */
export function parseUsd(text: string): PicoUsd {
  const v = parseDecimal(text.trim());
  return roundScaled(
    v.scale >= 12 ? { coef: v.coef, scale: v.scale - 12 } : { coef: v.coef * pow10(12 - v.scale), scale: 0 },
  );
}

/**
 * Pico-USD as an exact USD decimal string. Without `decimals`: every significant digit, no trailing zeros
 * (270_000_000n -> "0.00027"). With `decimals`: exactly that many places; when that drops digits the value
 * is rounded half away from zero (display only, never stored).
 */
export function formatUsd(pico: PicoUsd, decimals?: number): string {
  if (decimals === undefined) return formatDecimal({ coef: pico, scale: 12 });
  if (!Number.isInteger(decimals) || decimals < 0) throw new RangeError(`bad decimals: ${decimals}`);
  const shown = decimals >= 12 ? pico * pow10(decimals - 12) : roundScaled({ coef: pico, scale: 12 - decimals });
  const neg = shown < 0n;
  const digits = (neg ? -shown : shown).toString().padStart(decimals + 1, '0');
  const cut = digits.length - decimals;
  return `${neg ? '-' : ''}${digits.slice(0, cut)}${decimals > 0 ? '.' + digits.slice(cut) : ''}`;
}
