/** Numbers and money as the CLI's tables print them. Exact values are for --json; a table is for reading. */
import { formatUsd } from '../pricing/money';

/**
 * Made on first use: an Intl formatter reads ICU's locale data from the node binary (about 5 MiB of its pages),
 * which `tollgate start` (this module is loaded with every command) would otherwise hold for nothing.
 */
let grouped: Intl.NumberFormat | undefined;
const CENT = 10_000_000_000n; // pico-USD

/** A count with thousands separators: 1234567 -> "1,234,567". */
export function count(n: number | bigint): string {
  return (grouped ??= new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })).format(n);
}

/** "1060.114667" -> "1,060.114667": separators in the integer part of a decimal string. */
function groupDecimal(decimal: string): string {
  const [whole, frac] = decimal.split('.');
  return `${count(BigInt(whole))}${frac !== undefined ? `.${frac}` : ''}`;
}

/**
 * Pico-USD to the cent: "$1,060.11". A cost that is not zero but under half a cent is "<$0.01", never "$0.00".
 * `floor` rounds down instead of to the nearest cent, so that a lower bound (">=") stays one.
 */
export function usdCents(pico: bigint, floor = false): string {
  if (pico < 0n) return `-${usdCents(-pico, floor)}`;
  const shown = floor ? formatUsd(pico - (pico % CENT), 2) : formatUsd(pico, 2);
  if (pico > 0n && shown === '0.00' && !floor) return '<$0.01';
  return `$${groupDecimal(shown)}`;
}
