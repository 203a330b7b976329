/** Exact ratios of pico-USD amounts and token counts, in millionths, for tolerances and discounts (no floats). */
import { parseDecimal } from '../pricing/decimal';

export const PPM = 1_000_000n;

/** a / b in millionths, rounded half up; null when b is zero. */
export function ratioPpm(a: bigint, b: bigint): bigint | null {
  if (b === 0n) return null;
  const neg = a < 0n !== b < 0n;
  const [x, y] = [a < 0n ? -a : a, b < 0n ? -b : b];
  const q = (x * PPM * 2n + y) / (2n * y);
  return neg ? -q : q;
}

/** Millionths as a decimal string with 6 places ("1.250000"). */
export function ppmText(ppm: bigint): string {
  const neg = ppm < 0n;
  const digits = (neg ? -ppm : ppm).toString().padStart(7, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

/** A decimal share ("0.005") in millionths; more than 6 decimals is refused. */
export function ppmOf(decimal: string): bigint {
  const v = parseDecimal(decimal);
  if (v.coef < 0n || v.scale > 6) throw new RangeError(`not a share with at most 6 decimals: ${decimal}`);
  return v.coef * 10n ** BigInt(6 - v.scale);
}

/** Whether a and b differ by no more than `tolerancePpm` of b (both zero agree; b zero and a not never does). */
export function within(a: bigint, b: bigint, tolerancePpm: bigint): boolean {
  const diff = a > b ? a - b : b - a;
  const base = b < 0n ? -b : b;
  return diff * PPM <= tolerancePpm * base;
}

/** amount x ppm / 10^6, rounded half up (a list price times a discount multiplier). */
export function applyPpm(amount: bigint, ppm: bigint): bigint {
  return (amount * ppm * 2n + PPM) / (2n * PPM);
}

/** Millionths rounded to 4 decimals, as text ("0.7600"). */
export function ppmText4(ppm: bigint): string {
  return ppmText(((ppm + 50n) / 100n) * 100n).slice(0, -2);
}
