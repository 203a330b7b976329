import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { GatewayError } from './errors';
import type { UpstreamTimeouts } from './provider';

export interface UpstreamCall {
  /** Absolute URL: provider base URL + upstream path + query. */
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string | string[]>;
  /** A stream (a spooled upload) needs its content-length in `headers`. */
  body: Buffer | Readable | undefined;
  signal: CancelSignal;
  timeouts: UpstreamTimeouts;
}

/**
 * Cancels an upstream call when the client leaves. undici takes an EventEmitter as its abort signal: one per
 * request costs far less than an AbortController, whose AbortSignal is an EventTarget (~3% of a request's CPU).
 */
export class CancelSignal extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

export interface PoolOptions {
  connections: number;
  keepAliveMs: number;
}

/** One keep-alive undici Pool per upstream origin, created on first use and reused by every request. */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly options: PoolOptions) {}

  private pool(origin: string, connectMs: number): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.options.connections,
        keepAliveTimeout: this.options.keepAliveMs,
        keepAliveMaxTimeout: this.options.keepAliveMs,
        connect: { timeout: connectMs },
        pipelining: 1,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Sends the request; resolves when the upstream's status and headers arrived. Body bytes are not touched. */
  async send(call: UpstreamCall): Promise<Dispatcher.ResponseData> {
    const { origin, path } = partsOf(call.url);
    const pool = this.pool(origin, call.timeouts.connectMs);
    try {
      return await pool.request({
        path,
        method: call.method,
        headers: call.headers,
        body: call.body,
        signal: call.signal,
        headersTimeout: call.timeouts.firstByteMs,
        bodyTimeout: call.timeouts.idleMs,
      });
    } catch (err) {
      throw upstreamFailure(err, call.url.origin);
    }
  }

  /** Open sockets across all pools (for leak checks in tests and metrics). */
  connectedSockets(): number {
    let n = 0;
    for (const pool of this.pools.values()) n += pool.stats.connected;
    return n;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

/** Origin and path of an upstream URL, computed once per URL object (the proxy reuses its URLs; never mutated). */
const urlParts = new WeakMap<URL, { origin: string; path: string }>();
function partsOf(url: URL): { origin: string; path: string } {
  let parts = urlParts.get(url);
  if (!parts) urlParts.set(url, (parts = { origin: url.origin, path: url.pathname + url.search }));
  return parts;
}

/** Maps a transport failure to the gateway error a client sees. */
export function upstreamFailure(err: unknown, origin: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') {
    return new GatewayError('request_aborted', 'The client closed the request', { cause: err });
  }
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.ConnectTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError('upstream_timeout', `The upstream provider at ${origin} did not answer in time`, { cause: err });
  }
  return new GatewayError('upstream_unreachable', `The upstream provider at ${origin} could not be reached`, { cause: err });
}
