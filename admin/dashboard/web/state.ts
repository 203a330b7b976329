/** What the user is looking at: time range, filters, grouping. Kept in sessionStorage (no secret in it). */
import { DAY } from './format.js';

export type Preset = '24h' | 'today' | 'yesterday' | '7d' | '30d' | 'mtd' | 'last-month' | 'custom';

/** UTC midnight of the day holding `ms`, and the first of its month. */
const dayStart = (ms: number): number => Math.floor(ms / DAY) * DAY;
const monthStart = (ms: number, back = 0): number => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1);
};

/** The presets, all in UTC: a rolling window ends now, a calendar one at its UTC day or month boundary. */
export const PRESETS: {
  id: Exclude<Preset, 'custom'>;
  label: string;
  /** "vs previous ..." */
  noun: string;
  range(now: number): { from: number; to: number };
}[] = [
  { id: '24h', label: '24 h', noun: '24 h', range: (now) => ({ from: now - DAY, to: now }) },
  { id: 'today', label: 'Today', noun: 'day', range: (now) => ({ from: dayStart(now), to: now }) },
  {
    id: 'yesterday',
    label: 'Yesterday',
    noun: 'day',
    range: (now) => ({ from: dayStart(now) - DAY, to: dayStart(now) }),
  },
  { id: '7d', label: '7 days', noun: '7 days', range: (now) => ({ from: now - 7 * DAY, to: now }) },
  { id: '30d', label: '30 days', noun: '30 days', range: (now) => ({ from: now - 30 * DAY, to: now }) },
  { id: 'mtd', label: 'Month to date', noun: 'period', range: (now) => ({ from: monthStart(now), to: now }) },
  {
    id: 'last-month',
    label: 'Last month',
    noun: 'month',
    range: (now) => ({ from: monthStart(now, 1), to: monthStart(now) }),
  },
];

export interface ViewState {
  preset: Preset;
  /** Custom range, epoch ms. */
  from?: number;
  to?: number;
  groupBy: string;
  /** Stacked filters, in the order they were added. */
  filters: [string, string][];
  metric: 'cost' | 'requests';
}

const KEY = 'tollgate.dashboard.view';

export function loadState(): ViewState {
  const fallback: ViewState = { preset: '7d', groupBy: 'agent', filters: [], metric: 'cost' };
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Partial<ViewState> | null;
    return saved ? { ...fallback, ...saved } : fallback;
  } catch {
    return fallback;
  }
}

export function saveState(s: ViewState): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export interface Range {
  from: number;
  to: number;
  interval: 'hour' | 'day';
  /** "24 h", "7 days", "custom range" (for "vs previous ..."). */
  label: string;
}

/** Up to three days in hourly buckets, longer ranges in daily buckets. */
export function resolveRange(s: ViewState, now = Date.now()): Range {
  const interval = (from: number, to: number) => (to - from <= 3 * DAY ? 'hour' : 'day') as Range['interval'];
  if (s.preset === 'custom' && s.from !== undefined && s.to !== undefined && s.from < s.to) {
    return { from: s.from, to: s.to, interval: interval(s.from, s.to), label: 'period' };
  }
  const p = PRESETS.find((x) => x.id === s.preset) ?? PRESETS[3];
  const { from, to } = p.range(now);
  return { from, to, interval: interval(from, to), label: p.noun };
}

export const BUILTIN_LABELS: Record<string, string> = {
  provider: 'provider',
  model: 'model',
  requested_model: 'requested model',
  served_model: 'served model',
  endpoint: 'endpoint',
  workspace: 'workspace',
  key_id: 'key',
  status: 'status',
};

/**
 * The group-by choices: agent, feature, customer_id, provider, model, then every other tag key in the
 * data, then the remaining built-ins. A tag named like a built-in is reached as tag:<name>.
 */
export function dimensionChoices(builtin: string[], tags: string[]): string[] {
  const tagNames = tags.map((t) => (builtin.includes(t) ? `tag:${t}` : t));
  const first = ['agent', 'feature', 'customer_id', 'provider', 'model'];
  const rest = tagNames.filter((t) => !first.includes(t)).sort();
  const out = [...first, ...rest, ...builtin.filter((b) => !first.includes(b))];
  return [...new Set(out)];
}
