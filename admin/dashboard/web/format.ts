/** Number, money and time formatting. Money stays exact (bigint pico-USD) until it is rounded for display. */

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
const PICO = 1_000_000_000_000n;

const intFmt = new Intl.NumberFormat('en-US');
export const int = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : intFmt.format(n));

/** pico-USD rounded half away from zero to `decimals` places, with thousands separators. */
export function usdFixed(pico: bigint, decimals: number): string {
  const neg = pico < 0n;
  const abs = neg ? -pico : pico;
  const unit = 10n ** BigInt(12 - decimals);
  const q = (abs * 2n + unit) / (2n * unit); // round half up on the absolute value
  const whole = q / 10n ** BigInt(decimals);
  const frac = (q % 10n ** BigInt(decimals)).toString().padStart(decimals, '0');
  return `${neg ? '-' : ''}$${intFmt.format(whole)}${decimals ? `.${frac}` : ''}`;
}

/** "$1,234.57", "$0.0123", "$0.000042", "<$0.000001"; null (unknown cost) is "—", never $0. */
export function money(pico: string | bigint | null | undefined): string {
  if (pico === null || pico === undefined) return '—';
  const v = typeof pico === 'bigint' ? pico : BigInt(pico);
  const abs = v < 0n ? -v : v;
  if (abs === 0n) return '$0.00';
  if (abs >= PICO) return usdFixed(v, 2);
  if (abs >= PICO / 100n) return usdFixed(v, 4);
  if (abs >= PICO / 2_000_000n) return usdFixed(v, 6);
  return v < 0n ? '>-$0.000001' : '<$0.000001';
}

/**
 * Labels for an axis of USD values (the chart's ticks): every label with the same number of decimals, the fewest
 * (2 to 8) that show each tick exactly, so "$0.005" never stands next to "$0.0500".
 */
export function axisMoney(ticks: number[]): (usd: number) => string {
  let decimals = 2;
  while (decimals < 8 && !ticks.every((t) => Math.abs(t * 10 ** decimals - Math.round(t * 10 ** decimals)) < 1e-6))
    decimals++;
  return (usd) => usdFixed(BigInt(Math.round(usd * 1e12)), decimals);
}

/**
 * A group's share of the total cost, percent with two decimals, rounded half up once: the same
 * arithmetic as the CSV (admin/dashboard/share.ts). Empty when the total cost is zero.
 */
export function costSharePct(cost: bigint, total: bigint): string {
  if (total <= 0n) return '';
  const bp = (cost * 20_000n + total) / (2n * total);
  return `${bp / 100n}.${(bp % 100n).toString().padStart(2, '0')}`;
}

/** Change against the previous period: "+12.3%", "−4.0%", "new" (nothing before), "" (nothing at all). */
export function change(cur: number, prev: number): { text: string; dir: 'up' | 'down' | 'flat' | 'none' } {
  if (prev === 0) return cur === 0 ? { text: '', dir: 'none' } : { text: 'new', dir: 'up' };
  const pct = ((cur - prev) / prev) * 100;
  if (Math.abs(pct) < 0.05) return { text: '±0%', dir: 'flat' };
  return {
    text: `${pct > 0 ? '+' : '−'}${Math.abs(pct) >= 100 ? Math.round(Math.abs(pct)) : Math.abs(pct).toFixed(1)}%`,
    dir: pct > 0 ? 'up' : 'down',
  };
}

/** A share in percent; "—" of nothing (no requests), never a 0 % that reads as "none failed". */
export const pct = (part: number, whole: number): string =>
  whole === 0 ? '—' : `${((part / whole) * 100).toFixed(part === whole || part === 0 ? 0 : 1)}%`;

const pad = (n: number) => String(n).padStart(2, '0');

/** Date and time in UTC, like every range and bucket of the page: "2026-11-22 14:03:05 UTC". */
export function dateTime(iso: string | number | null): string {
  if (iso === null) return '—';
  return `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Value for an <input type="datetime-local">. */
/** The value of a datetime-local input showing `ms` in UTC (the dashboard's ranges are UTC). */
export function utcInput(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16);
}

/** The epoch ms of a datetime-local input's value read as UTC. */
export const fromUtcInput = (value: string): number => Date.parse(`${value}:00Z`);

/** Bucket label in UTC (buckets are UTC hours / days). */
export function bucketLabel(ms: number, interval: 'hour' | 'day'): string {
  const d = new Date(ms);
  const day = `${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  return interval === 'day' ? day : `${day} ${pad(d.getUTCHours())}:00`;
}

export function ago(iso: string | null): string {
  if (!iso) return 'never';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

export function ms(n: number | null): string {
  if (n === null) return '—';
  return n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
}
