/** Amounts and forecasts in words, as alert titles, summaries and Slack messages show them. */
import { formatUsd, parseUsd } from '../pricing/money';
import type { AlertBudget, AlertForecast } from './alert';

const CENT = 10_000_000_000n; // pico-USD

/** Dollars for people: cents with thousands separators ("$2,310.00"), or more digits below a cent. */
export function usdText(pico: bigint): string {
  const [whole, frac] = formatUsd(pico, pico !== 0n && pico < CENT ? 6 : 2).split('.');
  return `$${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${frac}`;
}

const PERIOD_NOUN = { day: 'day', month: 'month' } as const;

/** 1st, 2nd, 3rd, 4th ... 11th, 12th, 13th ... 21st, 22nd, 23rd, 24th ... */
function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

/** When the limit is reached: a day of a monthly budget ("on the 24th"), a time of a daily one ("at 17:40 UTC"). */
function reachedText(at: string, period: AlertBudget['period']): string {
  const d = new Date(at);
  return period === 'month' ? `on the ${ordinal(d.getUTCDate())}` : `at ${d.toISOString().slice(11, 16)} UTC`;
}

/**
 * The forecast as a sentence: "At this rate the month ends at $2,310.00 of $2,000.00, the limit reached on the
 * 24th." (or "... of $2,000.00, within the limit." when the projection stays below it).
 */
export function forecastSentence(f: AlertForecast, b: AlertBudget): string {
  const projected = parseUsd(f.projected_usd);
  const limit = parseUsd(b.limit_usd);
  const head = `At this rate the ${PERIOD_NOUN[b.period]} ends at ${usdText(projected)} of ${usdText(limit)}`;
  if (projected < limit) return `${head}, within the limit.`;
  return f.limit_reached_at === null
    ? `${head}.`
    : `${head}, the limit reached ${reachedText(f.limit_reached_at, b.period)}.`;
}
