/**
 * Each provider's money unit, converted to pico-USD once, here. OpenAI's Costs API gives dollars as JSON numbers,
 * Anthropic's cost report gives cents as decimal strings: reading one as the other is a 100x slip, so no reader
 * converts an amount itself.
 */
import type { PicoUsd } from '../records/usage-record';
import { decimalFromNumber, shiftDecimal } from '../pricing/decimal';
import { parseUsd } from '../pricing/money';

export type MoneyUnit = 'usd' | 'cents';

export class BadAmountError extends Error {}

/** A decimal string as the cost reports write it; a credit may be negative. */
const AMOUNT = /^-?\d+(?:\.\d+)?$/;

/** An amount as the provider wrote it (a number or a decimal string) in its unit, as pico-USD. Exact. */
export function picoFrom(amount: unknown, unit: MoneyUnit): PicoUsd {
  let text: string;
  if (typeof amount === 'number' && Number.isFinite(amount)) text = decimalFromNumber(amount);
  else if (typeof amount === 'string' && AMOUNT.test(amount.trim())) text = amount.trim();
  else throw new BadAmountError(`not an amount: ${JSON.stringify(amount)}`);
  return parseUsd(unit === 'cents' ? shiftDecimal(text, -2) : text);
}

/** The currency must be US dollars (the gateway's unit); anything else is refused rather than summed as dollars. */
export function requireUsd(currency: unknown): void {
  if (typeof currency === 'string' && currency.toLowerCase() === 'usd') return;
  throw new BadAmountError(`currency ${JSON.stringify(currency)} is not USD`);
}
