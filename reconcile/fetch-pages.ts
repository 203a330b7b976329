/**
 * Reads every page of a provider's admin report: follows `next_page` while `has_more`, waits out a 429 or 503 as
 * long as its Retry-After says (within a limit), and gives up on a time-out or any other error with a
 * ReconcileFetchError that names the endpoint and the status, never the key. The key is sent as a header of these
 * calls only.
 */
import { request } from 'undici';
import { retryAfterMs } from '../alerts/post-json';

export interface FetchOptions {
  /** Headers carrying the admin key and the API version. */
  headers: Record<string, string>;
  timeoutMs: number;
  /** How often a rate-limited page is asked again before the run fails. */
  maxRetries: number;
  /** The longest wait a Retry-After may impose. */
  maxRetryWaitMs: number;
  /** Pages per endpoint before the run refuses to go on (a provider looping on the same cursor). */
  maxPages: number;
}

export const DEFAULT_FETCH: Omit<FetchOptions, 'headers'> = {
  timeoutMs: 30_000,
  maxRetries: 3,
  maxRetryWaitMs: 60_000,
  maxPages: 1000,
};

export class ReconcileFetchError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

export interface ReportPage<T> {
  data: T[];
  has_more?: boolean;
  next_page?: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One GET, retried after Retry-After on 429/503; the parsed JSON body. */
export async function getJson(url: URL, label: string, opts: FetchOptions): Promise<unknown> {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'tollgate-reconcile', ...opts.headers },
        signal: AbortSignal.timeout(opts.timeoutMs),
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
      });
    } catch (err) {
      const code = (err as { code?: string; name?: string }).code ?? (err as Error).name;
      throw new ReconcileFetchError(`${label}: no answer (${code})`, null);
    }
    const text = await res.body.text();
    if (res.statusCode === 200) {
      try {
        return JSON.parse(text);
      } catch {
        throw new ReconcileFetchError(`${label}: the answer is not JSON`, 200);
      }
    }
    const wait = retryAfterMs(res.headers['retry-after']) ?? 1000 * 2 ** attempt;
    const retryable = res.statusCode === 429 || res.statusCode === 503;
    if (retryable && attempt < opts.maxRetries && wait <= opts.maxRetryWaitMs) {
      await sleep(wait);
      continue;
    }
    throw new ReconcileFetchError(`${label}: HTTP ${res.statusCode}${errorMessageOf(text)}`, res.statusCode);
  }
}

/** The provider's own error message, when its answer has one (both providers use {error: {message}}). */
function errorMessageOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' ? `: ${message.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}

/**
 * Every item of every page of `url` (its query already set); `pageParam` is the query parameter that carries the
 * cursor. Returns the items and the number of pages read.
 */
export async function fetchAllPages<T>(
  url: URL,
  label: string,
  opts: FetchOptions,
  pageParam = 'page',
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let pages = 0;
  let cursor: string | null = null;
  do {
    if (pages >= opts.maxPages) throw new ReconcileFetchError(`${label}: more than ${opts.maxPages} pages`, null);
    const pageUrl = new URL(url);
    if (cursor !== null) pageUrl.searchParams.set(pageParam, cursor);
    const body = (await getJson(pageUrl, label, opts)) as ReportPage<T>;
    if (!body || !Array.isArray(body.data))
      throw new ReconcileFetchError(`${label}: the answer has no data array`, 200);
    items.push(...body.data);
    pages++;
    cursor = body.has_more === true && typeof body.next_page === 'string' ? body.next_page : null;
  } while (cursor !== null);
  return { items, pages };
}
