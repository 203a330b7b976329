import { UserError } from './errors';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The latest instant a JavaScript Date can hold (year 275760): anything later is a typo. */
const MAX_TIME = 8.64e15;
/** 2024-05-01, 2024-05-01T12:00, 2024-05-01 12:00:00.5Z, 2024-05-01T12:00+02:00 */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

export const TIME_HELP = '24h or 7d ago, an ISO date or epoch ms';

/** --from / --to: "24h" and "7d" count back from `now`; otherwise an ISO 8601 date or epoch milliseconds. */
export function parseTime(text: string, flag: string, now: number): number {
  const rel = /^(\d+)([hd])$/.exec(text);
  let t: number;
  if (rel) t = now - Number(rel[1]) * (rel[2] === 'h' ? HOUR : DAY);
  else if (/^\d+$/.test(text)) t = Number(text);
  else if (ISO_DATE.test(text)) t = Date.parse(text.replace(' ', 'T'));
  else throw new UserError(`${flag}: cannot read the time "${text}" (use ${TIME_HELP})`);
  if (Number.isNaN(t) || (!rel && ISO_DATE.test(text) && !realDay(text)))
    throw new UserError(`${flag}: "${text}" is not a date`);
  if (!Number.isSafeInteger(t) || t < 0 || t > MAX_TIME) throw new UserError(`${flag}: "${text}" is out of range`);
  return t;
}

/** Whether the YYYY-MM-DD of an ISO date exists (Date.parse takes 2026-02-30 for March 2). */
function realDay(text: string): boolean {
  const [y, m, d] = text.slice(0, 10).split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d;
}

/** [from, to) from the --from and --to options; an empty or inverted range is refused (it would sum to $0). */
export function timeRange(
  opts: { from?: string; to?: string },
  defaultFrom: (to: number) => number,
  now = Date.now(),
): { from: number; to: number } {
  const to = opts.to === undefined ? now : parseTime(opts.to, '--to', now);
  const from = opts.from === undefined ? Math.max(0, defaultFrom(to)) : parseTime(opts.from, '--from', now);
  if (from >= to) {
    throw new UserError(`--from ${new Date(from).toISOString()} must be before --to ${new Date(to).toISOString()}`);
  }
  return { from, to };
}
