import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors } from 'undici';
import { GatewayError } from './errors';
import type { UpstreamTimeouts } from './provider-contract';
import type { UpstreamExchange } from './upstream-exchange';

export interface UpstreamCall {
  /** Absolute URL: provider base URL + upstream path + query. */
  url: URL;
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string | string[]>;
  /** A stream (a spooled upload) needs its content-length in `headers`. */
  body: Buffer | Readable | undefined;
  timeouts: UpstreamTimeouts;
  /** The provider's slug: errors name it, never the upstream's address. */
  provider: string;
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

  /**
   * Sends the request; resolves with the exchange once the upstream's status and headers arrived. The body is
   * read from the exchange (core/upstream-exchange.ts); its bytes are not touched.
   */
  async send(call: UpstreamCall, exchange: UpstreamExchange): Promise<UpstreamExchange> {
    const { origin, path } = partsOf(call.url);
    this.pool(origin, call.timeouts.connectMs).dispatch(
      {
        path,
        method: call.method,
        headers: call.headers,
        body: call.body,
        headersTimeout: call.timeouts.firstByteMs,
        bodyTimeout: call.timeouts.idleMs,
      },
      exchange,
    );
    try {
      return await exchange.response();
    } catch (err) {
      throw upstreamFailure(err, call.provider);
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

/**
 * Maps a transport failure to the gateway error a client sees. It names the provider by its slug: the upstream's
 * address (often an internal one for a self-hosted model) and the transport's own message stay in the log.
 */
export function upstreamFailure(err: unknown, provider: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') {
    return new GatewayError('request_aborted', 'The client closed the request', { cause: err });
  }
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError
  ) {
    return new GatewayError('upstream_timeout', `The upstream provider ${provider} did not answer in time`, {
      cause: err,
    });
  }
  return new GatewayError('upstream_unreachable', `The upstream provider ${provider} could not be reached`, {
    cause: err,
  });
}
