/**
 * The admin API, as the page calls it. The admin token lives in this tab's sessionStorage only (never in
 * a URL, a cookie or localStorage) and goes out as `Authorization: Bearer` on every call.
 */
import type { ReconciliationAnswer } from './reconciliation.js';

const TOKEN_KEY = 'tollgate.adminToken';

export const getToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (token: string): void => sessionStorage.setItem(TOKEN_KEY, token);
export const clearToken = (): void => sessionStorage.removeItem(TOKEN_KEY);

/** The token was missing or refused: back to the login form. */
export class AuthError extends Error {}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The request field the error names (`usd`, `per_tag`...), so a form can show it beside that field. */
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export interface Totals {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
  citation_tokens: number;
  search_queries: number;
  /** Sum of the known costs; null when every record of the group is unpriced (cost unknown, never $0). */
  cost_usd: string | null;
  cost_pico: string | null;
  /**
   * known | lower_bound (some records unpriced or not counted: cost_usd is the sum of the others) | unknown |
   * not_counted (all are audio or images with nothing to price them by)
   */
  cost_status: 'known' | 'lower_bound' | 'unknown' | 'not_counted';
  /** The cost at the catalog's list price, before negotiated discounts; null when cost_usd is. */
  list_cost_usd: string | null;
  list_cost_pico: string | null;
  discount_usd: string | null;
  /** Priced records without a list cost (priced before records kept one), in list_cost_usd at their cost. */
  list_cost_unknown_count: number;
  unpriced_count: number;
  not_counted_count: number;
  estimated_count: number;
  partial_count: number;
  error_count: number;
}

export interface GroupRow extends Totals {
  group: Record<string, string | null>;
  bucket?: string;
}

export interface UsageResponse {
  from: string;
  to: string;
  group_by: string[];
  interval: 'hour' | 'day' | null;
  filters: Record<string, string>;
  /** The page's groups, most expensive first. */
  rows: GroupRow[];
  /** Every group not on the page, summed: rows + other = total; null when the page holds every group. */
  other: (Totals & { groups: number }) | null;
  total: Totals | null;
  /** Groups in all pages. */
  groups: number;
  limit: number;
  offset: number;
  /** The search the groups were paged by ('' for none): groups then counts the groups that match it. */
  search: string;
  next_offset: number | null;
  /** Per-request records before this were deleted by retention (null: none were); totals stay exact from the rollups. */
  records_kept_from: string | null;
  /** Parts of the range only those deleted records could have answered: not counted. */
  uncounted: { from: string; to: string }[];
}

export interface RecordJson {
  id: string;
  time: string;
  workspace: string | null;
  key_id: string | null;
  provider: string | null;
  model: string | null;
  served_model: string | null;
  endpoint: string | null;
  status: number;
  streamed: boolean;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  cost_usd: string | null;
  cost_pico: string | null;
  provenance: string;
  latency_ms: number;
  ttfb_ms: number | null;
  tags: Record<string, string>;
  error_code: string | null;
}

export interface KeyJson {
  id: string;
  workspace: string;
  label: string;
  /** null for a key declared in gateway.config.yaml. */
  created_at: string | null;
  last_used_at: string | null;
  revoked: boolean;
  revoked_at: string | null;
  /** store: created here or with the CLI (revocable); config: declared in gateway.config.yaml (read-only). */
  source?: 'store' | 'config';
}

export interface InfoJson {
  proxy_url: string | null;
  workspaces: { id: string; name: string | null }[];
  has_records: boolean;
  latest_record_at: string | null;
}

export interface DimensionsJson {
  builtin: string[];
  tags: string[];
}

export interface SeriesJson {
  cost_usd: string[];
  cost_pico: string[];
  requests: number[];
}

export interface SeriesResponse {
  buckets: string[];
  interval: 'hour' | 'day';
  series: (SeriesJson & { group: string })[];
  other: SeriesJson | null;
  total: SeriesJson;
}

type Quantiles = { p50: number | null; p95: number | null };

/** GET /api/latency (admin/openapi/latency-paths.ts describes every field). */
export interface LatencyResponse {
  buckets: string[];
  interval: 'hour' | 'day';
  sample: { records: number; limit: number; complete: boolean; oldest: string | null };
  models: {
    provider: string;
    model: string;
    requests: number;
    errors: number;
    sampled: number;
    timed: number;
    latency_ms: Quantiles;
    ttfb_ms: Quantiles;
    overhead_ms: Quantiles;
    series: Record<`${'latency' | 'ttfb' | 'overhead'}_${'p50' | 'p95'}`, (number | null)[]>;
  }[];
  models_other: number;
  errors: {
    requests: number;
    errors: number;
    by_status: { status: number; requests: number; errors: number }[];
    by_code: { error_code: string; status: number; requests: number }[];
    series: { requests: number[]; errors: number[] };
  };
}

/** A budget in its current period (GET /api/budgets): one per budget, or per tag value or key of a per_tag budget. */
export interface BudgetJson {
  id: string;
  source: 'yaml' | 'runtime';
  workspace: string;
  scope: string;
  period: 'day' | 'month';
  period_start: string;
  period_end: string;
  limit_usd: string;
  spent_usd: string;
  reserved_usd: string;
  used_share: number;
  alert_at: number[];
  alerted: boolean;
  action: 'block' | 'alert' | 'clamp';
  forecast: { projected_usd: string; limit_reached_at: string | null; window_ms: number } | null;
}

/** What POST /api/budgets takes (PATCH: only the fields that change). */
export interface BudgetRequest {
  workspace?: string;
  period?: 'day' | 'month';
  usd?: string;
  tag?: Record<string, string>;
  per_tag?: string;
  key?: string;
  per_key?: boolean;
  alert_at?: number[];
  on_exceed?: 'warn' | 'block' | 'clamp';
}

export interface FreezeJson {
  id: string;
  workspace: string;
  scope: string;
  reason: string;
  state: 'active' | 'lifted' | 'expired';
  created_at: string;
  expires_at: string | null;
  lifted_at: string | null;
}

/** One delivery of an alert to one channel (GET /api/alerts), newest first. */
export interface AlertRow {
  alert_id: string;
  channel: string;
  kind: string;
  created_at: string;
  state: 'pending' | 'sent';
  alert: { scope: string; title: string };
}

export interface UsageParams {
  groupBy: string[];
  from: number;
  to: number;
  filters: [string, string][];
  interval?: 'hour' | 'day';
  /** The page of groups (GET /api/usage): rank of its first, and a text its groups' values hold. */
  offset?: number;
  search?: string;
}

export function usageQuery(p: UsageParams): string {
  const q = new URLSearchParams();
  if (p.groupBy.length) q.set('group_by', p.groupBy.join(','));
  q.set('from', String(p.from));
  q.set('to', String(p.to));
  if (p.interval) q.set('interval', p.interval);
  if (p.offset) q.set('offset', String(p.offset));
  if (p.search) q.set('search', p.search);
  for (const [dim, value] of p.filters) q.set(`filter[${dim}]`, value);
  return q.toString();
}

async function call(path: string, init: RequestInit = {}, token = getToken()): Promise<Response> {
  if (!token) throw new AuthError('not signed in');
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  // Relative to the page, so the dashboard also works behind a reverse proxy under a path prefix.
  const res = await fetch(`api/${path}`, { ...init, headers, cache: 'no-store', credentials: 'omit' });
  if (res.status === 401) throw new AuthError('the admin token was refused');
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    let param: string | null = null;
    try {
      const body = (await res.json()) as { error?: { message?: string; param?: string | null } };
      if (body.error?.message) message = body.error.message;
      param = body.error?.param ?? null;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(message, res.status, param);
  }
  return res;
}

const json = async <T>(path: string, init?: RequestInit, token?: string): Promise<T> =>
  (await call(path, init, token)).json() as Promise<T>;

const send = <T>(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<T> =>
  json<T>(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

export const api = {
  /** Checks a token before keeping it. */
  info: (token?: string) => json<InfoJson>('info', {}, token),
  dimensions: () => json<DimensionsJson>('dimensions'),
  usage: (p: UsageParams) => json<UsageResponse>(`usage?${usageQuery(p)}`),
  /** The chart's stacks: one series per value, "other" and the total, per UTC hour/day. */
  usageSeries: (p: UsageParams & { values: string[] }) => {
    const q = new URLSearchParams(usageQuery(p));
    for (const v of p.values) q.append('value', v);
    return json<SeriesResponse>(`usage/series?${q}`);
  },
  usageCsv: async (p: UsageParams): Promise<{ text: string; filename: string }> => {
    const res = await call(`usage.csv?${usageQuery(p)}`);
    const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'usage.csv';
    return { text: await res.text(), filename };
  },
  latency: (p: UsageParams) => json<LatencyResponse>(`latency?${usageQuery(p)}`),
  reconciliation: (query: string) => json<ReconciliationAnswer>(`reconciliation?${query}`),
  requests: (p: { from: number; to: number; filters: [string, string][]; limit: number; cursor?: string | null }) => {
    const q = new URLSearchParams({ from: String(p.from), to: String(p.to), limit: String(p.limit) });
    for (const [dim, value] of p.filters) q.set(`filter[${dim}]`, value);
    if (p.cursor) q.set('cursor', p.cursor);
    return json<{ data: RecordJson[]; next_cursor: string | null }>(`requests?${q}`);
  },
  /** A page of the keys (the store's oldest first, then the config file's): next_cursor fetches the next. */
  keys: (cursor?: string | null) =>
    json<{ data: KeyJson[]; next_cursor: string | null }>(
      `keys?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    ),
  createKey: (body: { label?: string; workspace?: string }) => send<KeyJson & { key: string }>('POST', 'keys', body),
  revokeKey: (id: string) =>
    json<{ id: string; revoked: boolean }>(`keys/${encodeURIComponent(id)}`, { method: 'DELETE' }),
  /** A page of the budgets in their current period (every workspace), next_cursor fetches the next. */
  budgets: (cursor?: string | null) =>
    json<{ data: BudgetJson[]; next_cursor: string | null }>(
      `budgets?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    ),
  createBudget: (body: BudgetRequest) => send<{ id: string }>('POST', 'budgets', body),
  changeBudget: (id: string, body: BudgetRequest) =>
    send<{ id: string }>('PATCH', `budgets/${encodeURIComponent(id)}`, body),
  /** The newest alert deliveries (a page of the API's limit). */
  alerts: () => json<{ data: AlertRow[] }>('alerts?limit=1000'),
  /** The spend freezes in force. */
  freezes: () => json<{ data: FreezeJson[] }>('freezes?limit=1000'),
  liftFreeze: (id: string) => json<FreezeJson>(`freezes/${encodeURIComponent(id)}`, { method: 'DELETE' }),
};
