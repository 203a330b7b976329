/**
 * Exact decimal arithmetic on strings and bigints. No IEEE double ever holds a price: a decimal is
 * carried as `coef / 10^scale` with a bigint coefficient, so every price in the catalog is exact.
 */

/** An exact decimal value: coef / 10^scale, scale >= 0. */
export interface Scaled {
  readonly coef: bigint;
  readonly scale: number;
}

// Plain decimal ("2.5", "0.003625", "-1"), optionally in exponent form ("3.625e-9"), the shape String(number) emits.
const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const PLAIN_NON_NEGATIVE = /^\d+(?:\.\d+)?$/;
// Exponents beyond this cannot come from a JSON/YAML double and would only build giant bigints.
const MAX_EXPONENT = 400;

const POW10: bigint[] = [1n];
/** 10^n as a bigint (cached). */
export function pow10(n: number): bigint {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`pow10: bad exponent ${n}`);
  while (POW10.length <= n) POW10.push(POW10[POW10.length - 1] * 10n);
  return POW10[n];
}

/** True for a non-negative plain decimal string such as "2.5" or "0" (no sign, no exponent, no spaces). */
export function isPlainDecimal(text: string): boolean {
  return PLAIN_NON_NEGATIVE.test(text);
}

/** Parses a decimal string exactly; accepts an optional "-" and an exponent. Throws on anything else. */
export function parseDecimal(text: string): Scaled {
  const m = DECIMAL.exec(text);
  if (!m) throw new SyntaxError(`not a decimal number: ${JSON.stringify(text)}`);
  const [, sign, intPart, fracPart = '', expPart] = m;
  const exp = expPart === undefined ? 0 : Number.parseInt(expPart, 10);
  if (Math.abs(exp) > MAX_EXPONENT) throw new RangeError(`exponent out of range: ${text}`);
  let coef = BigInt(intPart + fracPart);
  let scale = fracPart.length - exp;
  if (scale < 0) {
    coef *= pow10(-scale);
    scale = 0;
  }
  return normalize({ coef: sign ? -coef : coef, scale });
}

/** Removes trailing zeros of the coefficient so equal values have one representation. */
export function normalize(v: Scaled): Scaled {
  let { coef, scale } = v;
  if (coef === 0n) return { coef: 0n, scale: 0 };
  while (scale > 0 && coef % 10n === 0n) {
    coef /= 10n;
    scale -= 1;
  }
  return { coef, scale };
}

/** The canonical plain decimal string of a value: no exponent, no trailing zeros ("0.0000025", "12", "-0.5"). */
export function formatDecimal(v: Scaled): string {
  const { coef, scale } = normalize(v);
  const neg = coef < 0n;
  const digits = (neg ? -coef : coef).toString();
  if (scale === 0) return (neg ? '-' : '') + digits;
  const padded = digits.padStart(scale + 1, '0');
  const cut = padded.length - scale;
  return `${neg ? '-' : ''}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

/** value x 10^places, exact ("2.5e-6" shifted by 6 -> "2.5"). */
export function shiftDecimal(text: string, places: number): string {
  const v = parseDecimal(text);
  const scale = v.scale - places;
  return formatDecimal(scale >= 0 ? { coef: v.coef, scale } : { coef: v.coef * pow10(-scale), scale: 0 });
}

/** Brings two values to a common scale. */
function align(a: Scaled, b: Scaled): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.coef * pow10(scale - a.scale), b.coef * pow10(scale - b.scale), scale];
}

export function addScaled(a: Scaled, b: Scaled): Scaled {
  const [x, y, scale] = align(a, b);
  return normalize({ coef: x + y, scale });
}

export function subScaled(a: Scaled, b: Scaled): Scaled {
  const [x, y, scale] = align(a, b);
  return normalize({ coef: x - y, scale });
}

export function mulScaled(a: Scaled, b: Scaled): Scaled {
  return normalize({ coef: a.coef * b.coef, scale: a.scale + b.scale });
}

/** -1, 0 or 1 as a < b, a = b, a > b. */
export function compareScaled(a: Scaled, b: Scaled): number {
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Product of two decimal strings, exact (a product of finite decimals is a finite decimal). */
export function mulDecimal(a: string, b: string): string {
  return formatDecimal(mulScaled(parseDecimal(a), parseDecimal(b)));
}

/** Sum of two decimal strings, exact. */
export function addDecimal(a: string, b: string): string {
  return formatDecimal(addScaled(parseDecimal(a), parseDecimal(b)));
}

/** Difference of two decimal strings, exact. */
export function subDecimal(a: string, b: string): string {
  return formatDecimal(subScaled(parseDecimal(a), parseDecimal(b)));
}

/** Compares two decimal strings exactly. */
export function compareDecimal(a: string, b: string): number {
  return compareScaled(parseDecimal(a), parseDecimal(b));
}

/**
 * The decimal a JSON/YAML number literal stood for. JS prints a double as the SHORTEST string that reads
 * back to the same double (ECMA-262 Number::toString), which is exactly the literal a serializer such as
 * Python's json.dumps wrote (2.5e-06 -> "2.5e-6" -> "0.0000025"). We only re-read that string without
 * floats; no arithmetic is ever done on the double itself.
 */
export function decimalFromNumber(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`not a finite number: ${n}`);
  return formatDecimal(parseDecimal(String(n)));
}
