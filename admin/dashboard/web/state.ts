/** What the user is looking at: time range, filters, grouping. Kept in sessionStorage (no secret in it). */
import { DAY, HOUR } from './format.js';

export type Preset = '1h' | '24h' | '7d' | '30d' | 'custom';
export const PRESETS: { id: Exclude<Preset, 'custom'>; label: string; span: number }[] = [
  { id: '1h', label: 'Last hour', span: HOUR },
  { id: '24h', label: '24 h', span: DAY },
  { id: '7d', label: '7 days', span: 7 * DAY },
  { id: '30d', label: '30 days', span: 30 * DAY },
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
  if (s.preset === 'custom' && s.from !== undefined && s.to !== undefined && s.from < s.to) {
    return { from: s.from, to: s.to, interval: s.to - s.from <= 3 * DAY ? 'hour' : 'day', label: 'period' };
  }
  const p = PRESETS.find((x) => x.id === s.preset) ?? PRESETS[2];
  return {
    from: now - p.span,
    to: now,
    interval: p.span <= 3 * DAY ? 'hour' : 'day',
    label: p.id === '1h' ? 'hour' : p.label,
  };
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
