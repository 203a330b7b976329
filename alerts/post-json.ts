/**
 * One delivery attempt: a JSON POST with a time limit. What it answers says whether to retry and when: a 2xx is
 * delivered; a 429 or 5xx, a time-out or a connection failure is retried (after Retry-After when the receiver
 * gives one); any other 4xx too, since the receiver's config may be fixed meanwhile. The error text names a status
 * or an error code, never the URL (a Slack webhook URL is its secret).
 */
import { request } from 'undici';

export interface PostResult {
  ok: boolean;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  /** The receiver's Retry-After, in ms. */
  retryAfterMs: number | null;
  error: string | null;
}

/** Retry-After as seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<PostResult> {
  try {
    const res = await request(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-alerts', ...headers },
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return {
      ok,
      status: res.statusCode,
      retryAfterMs: retryAfterMs(res.headers['retry-after']),
      error: ok ? null : `HTTP ${res.statusCode}`,
    };
  } catch (err) {
    return { ok: false, status: null, retryAfterMs: null, error: errorName(err) };
  }
}

function errorName(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timed out';
  if (typeof e?.code === 'string') return e.code;
  return typeof e?.name === 'string' ? e.name : 'request failed';
}
