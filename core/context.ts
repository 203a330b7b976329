import type { Logger } from 'pino';
import type { FileHead } from './upload';
import type { EndpointSpec } from './endpoints';
import type { GatewayError } from './errors';
import type { ProviderInstance } from './provider-contract';
import type { BatchJobAnswer, BatchResultLine, Usage } from './usage';

export interface Workspace {
  id: string;
  name: string;
}

/** Key of the raw request headers on a context; internal to the core. */
export const RAW_HEADERS = Symbol('tollgate.rawHeaders');

/** Headers a plugin may never read or write: the client's credentials (the admin token included, should a client send it here). */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'x-api-key',
  'x-gateway-key',
  'x-admin-token',
  'proxy-authorization',
  'cookie',
]);

/** SECRET_HEADERS plus every auth header a deployed provider reads its key from (e.g. x-goog-api-key). */
export function secretHeadersFor(providerAuthHeaders: Iterable<string>): ReadonlySet<string> {
  return new Set([...SECRET_HEADERS, ...providerAuthHeaders]);
}

/**
 * Per-request state shared by the core and the plugins (Koa's ctx.state.gw in spirit, but typed).
 * Fields are filled in as the request moves through the phases; each field says which phase sets it.
 */
export class GatewayContext {
  /** Request start, epoch ms (for records) and a monotonic clock (for latencies). */
  readonly startedAt = Date.now();
  readonly startedHr = performance.now();

  /** Set by auth (onRequest). */
  workspace: Workspace | undefined;
  keyId: string | undefined;
  /** The client's address (the TCP peer), set by the core before onRequest; e.g. for per-client limits. */
  clientAddress: string | undefined;
  /** Attribution tags; set by attribution (onRequest), plugins may add more. */
  readonly tags: Record<string, string> = Object.create(null);

  /** Set by the core before beforeUpstream. */
  provider: ProviderInstance | undefined;
  model: string | undefined;
  stream = false;
  /**
   * Raw request body as received (forwarded unchanged) and, for JSON endpoints, its parsed form. Undefined for
   * a large multipart upload, which is spooled to a temporary file (server.upload_spool_from) and sent from there.
   */
  body: Buffer | undefined;
  /** Size of the request body in bytes, also when it was spooled. */
  bodySize = 0;
  json: Record<string, unknown> | undefined;
  /** The plain fields of a multipart body (those before its first file part when it streamed through). */
  form: Record<string, string> | undefined;
  /** The first bytes of an audio upload's file (transcriptions, translations), read for its duration. */
  uploadHead: (() => FileHead | undefined) | undefined;
  /**
   * Headers that will be sent upstream; plugins may edit them in beforeUpstream. The provider's auth header is
   * never in this object: the core adds it to the upstream call only, so no plugin can read or replace it.
   */
  readonly upstreamHeaders: Record<string, string | string[]> = Object.create(null);

  /** Set by the core once every admission hook passed and the request went to the provider. */
  sentUpstream = false;
  /**
   * When the upstream call was sent, and when its answer had been read whole or relayed to its end (ms since the
   * request arrived; set by the core). What lies outside them is the gateway's own time (metrics, tracing).
   */
  upstreamSentMs: number | undefined;
  upstreamDoneMs: number | undefined;

  /** Set when the upstream answered (onResponse); a gateway error that answers instead replaces it. */
  status: number | undefined;
  /** The provider's own status code, kept when the client gets another (metrics). */
  upstreamStatus: number | undefined;
  ttfbMs: number | undefined;
  /**
   * Extra response headers plugins add (e.g. x-gateway-cost in onResponse); set in any gating phase, they go out with
   * every answer, refusals included. A header the answer already carries is never replaced.
   */
  readonly responseHeaders: Record<string, string> = Object.create(null);
  /** Complete body of a non-streamed JSON response (available in onResponse and onComplete). */
  responseBody: Buffer | undefined;

  /** Usage as reported by the provider, or estimated (see usageEstimated); set before onResponse/onComplete. */
  usage: Usage | undefined;
  usageEstimated = false;
  /** True when the response stream was cut (client disconnect, upstream reset or idle time-out). */
  streamCut = false;
  /** A batch's creation or retrieval answered with this batch (set with the JSON answer; batch endpoints only). */
  batchJob: BatchJobAnswer | undefined;
  /** The answered lines of batch results that passed through (set before onComplete; results endpoints only). */
  batchResults: readonly BatchResultLine[] | undefined;

  /** The gateway error that answered this request, if any. */
  error: GatewayError | undefined;
  /** Latency until the client got the last byte, ms; set before onComplete. */
  latencyMs = 0;

  /** Namespaced per-plugin state, e.g. state.set('ratelimit.slot', ...). */
  readonly state = new Map<string, unknown>();

  constructor(
    readonly requestId: string,
    readonly method: string,
    readonly path: string,
    readonly endpoint: EndpointSpec | undefined,
    rawHeaders: Readonly<Record<string, string | string[] | undefined>>,
    readonly log: Logger,
    private readonly secrets: ReadonlySet<string> = SECRET_HEADERS,
    /** Node's req.rawHeaders ([name, value, name, value ...]), which keeps repeated headers apart. */
    private readonly rawHeaderList?: readonly string[],
  ) {
    this[RAW_HEADERS] = rawHeaders;
  }

  /** @internal The raw request headers, credentials included. Not part of the plugin API. */
  readonly [RAW_HEADERS]: Readonly<Record<string, string | string[] | undefined>>;

  /** A request header by lower-case name. Credentials are never returned. */
  header(name: string): string | undefined {
    const key = name.toLowerCase();
    if (this.secrets.has(key)) return undefined;
    const v = this[RAW_HEADERS][key];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  /** How many times a request header was sent (header() joins repeated ones with ", "). */
  headerCount(name: string): number {
    const key = name.toLowerCase();
    const list = this.rawHeaderList;
    if (!list) return this[RAW_HEADERS][key] === undefined ? 0 : 1;
    let n = 0;
    for (let i = 0; i < list.length; i += 2) if (list[i].length === key.length && list[i].toLowerCase() === key) n++;
    return n;
  }

  /** Names of the request's headers (credentials included by name only). */
  headerNames(): string[] {
    return Object.keys(this[RAW_HEADERS]);
  }

  /** Milliseconds since the request arrived. */
  elapsedMs(): number {
    return performance.now() - this.startedHr;
  }
}

/** A credential header (first value), for the core only: plugins learn what a gateway key grants from KeyRingService.check. */
export function credentialHeader(ctx: GatewayContext, name: string): string | undefined {
  const v = ctx[RAW_HEADERS][name];
  return Array.isArray(v) ? v[0] : v;
}
