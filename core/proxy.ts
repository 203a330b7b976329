import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { BodyIntake, type BodyIntakeOptions, type HeldBody } from './body-intake';
import { bodyHeld } from './body-memory';
import { ModelCatalog } from './catalog';
import { GatewayContext, secretHeadersFor } from './context';
import { UpstreamCredentials, type GatewaySecretCheck } from './credentials';
import type { EndpointSpec } from './endpoints';
import { asGatewayError, GatewayError } from './errors';
import { forwardableRequestHeaders, forwardableResponseHeaders, headerValue, upstreamHeadersOf } from './headers';
import type { PluginPipeline } from './plugin-pipeline';
import type { ProviderRegistry } from './provider-routing';
import { closeAfterRefusal } from './refusal-close';
import { newRequestId, REQUEST_ID_HEADER } from './request-id';
import { decodeBody } from './response-body';
import { LineTap } from './line-tap';
import { StreamTap } from './stream-tap';
import { upstreamFailure, type UpstreamPools } from './upstream';
import { UpstreamExchange } from './upstream-exchange';
import type { SseEvent } from './usage';
import { settleUsage } from './usage-settle';

/** What the proxy works with; how request bodies are received: BodyIntakeOptions. */
export interface ProxyDeps extends BodyIntakeOptions {
  providers: ProviderRegistry;
  pipeline: PluginPipeline;
  pools: UpstreamPools;
  catalog: ModelCatalog;
  logger: Logger;
  /** True for a gateway key or the admin token: never sent upstream, even in a provider's credential header. */
  isGatewaySecret?: GatewaySecretCheck;
  /**
   * Adds what the request says about its own billed units to its usage once the client is done (an audio or image
   * request: providers/wire/media-request.ts); absent: the usage is what the answer reported.
   */
  settleRequestUsage?: (gw: GatewayContext) => Promise<void>;
}

/** application/json, or a +json type such as application/problem+json. */
function isJsonDocument(contentType: string): boolean {
  return contentType.startsWith('application/json') || contentType.includes('+json');
}

/**
 * Gateway errors of status 500+ that are not logged as failures of the gateway itself: time-outs and unreachable
 * upstreams are the provider's state; plugin_error, limits_unavailable and budget_unavailable were logged where they arose.
 */
const EXPECTED_FAILURES: ReadonlySet<string> = new Set([
  'upstream_timeout',
  'upstream_unreachable',
  'plugin_error',
  'limits_unavailable',
  'gateway_busy',
  'budget_unavailable',
]);

/**
 * One request on its way through the proxy: what its steps share, in one object instead of a list of parameters;
 * also what its body holds (HeldBody), until the request is over.
 */
interface InFlight extends HeldBody {
  readonly gw: GatewayContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly endpoint: EndpointSpec;
  /** Created before anything is read, so a client that leaves at any point cancels the upstream call too. */
  readonly upstream: UpstreamExchange;
  /** The provider named by X-Gateway-Provider, when the client sent one. */
  explicit: string | undefined;
  /** Watches a streamed answer for usage and the plugins' onStreamEvent. */
  tap: StreamTap | undefined;
  /** Reads a batch's results line by line as they pass. */
  lines: LineTap | undefined;
  /** The client got the whole answer: the response finished on a live connection. */
  delivered: boolean;
}

/**
 * The whole request flow, in one place:
 *   onRequest -> read body -> resolve provider -> beforeUpstream -> upstream call -> onResponse
 *   -> relay (stream piped chunk by chunk, or a JSON body in one piece) -> [client done] -> onComplete (in reverse).
 *
 * It writes the response on node:http itself rather than through Koa's response, so that the upstream's status,
 * headers and bytes go out untouched and as they arrive, with no body buffering or header rewriting in between.
 */
export class GatewayProxy {
  /** Requests not yet completed (onComplete included); shutdown waits for zero. */
  inflight = 0;
  /** Set when shutdown begins: requests still arriving on open connections are refused (503, connection closed). */
  draining = false;
  private idleWaiters: (() => void)[] = [];

  /** For the per-request line: its fields are ids, names and numbers only, so pino's redaction (costly per line) is skipped. */
  private readonly requestLog: Logger;
  /** Upstream URLs per provider base URL and path, parsed once (a few dozen at most). */
  private readonly upstreamUrls = new Map<string, URL>();

  /** Request headers no plugin may read: credentials, and the key header of every deployed provider. */
  private readonly secretHeaders: ReadonlySet<string>;
  /** Which credential header goes to which provider. */
  private readonly credentials: UpstreamCredentials;
  private readonly intake: BodyIntake;

  constructor(private readonly deps: ProxyDeps) {
    this.requestLog = deps.logger.child({}, { redact: [] });
    this.secretHeaders = secretHeadersFor(deps.providers.list().flatMap((p) => p.auth.headers));
    this.credentials = new UpstreamCredentials(deps.providers.list(), deps.isGatewaySecret);
    this.intake = new BodyIntake(deps);
  }

  async handle(req: IncomingMessage, res: ServerResponse, endpoint: EndpointSpec): Promise<void> {
    if (this.draining) return this.refuseWhileDraining(res);
    const id = newRequestId();
    const gw = new GatewayContext(
      id,
      req.method ?? 'GET',
      endpoint.path,
      endpoint,
      req.headers,
      this.deps.logger,
      this.secretHeaders,
      req.rawHeaders,
    );
    gw.clientAddress = req.socket.remoteAddress;
    const flight: InFlight = {
      gw,
      req,
      res,
      endpoint,
      upstream: new UpstreamExchange(),
      explicit: undefined,
      upload: undefined,
      reserved: 0,
      held: undefined,
      tap: undefined,
      lines: undefined,
      delivered: false,
    };
    this.inflight++;
    // Node also reports finish (and writableFinished) for a response whose socket was already reset, although
    // nothing more reached the client: delivered needs the socket alive too.
    const socket = req.socket;
    res.once('finish', () => (flight.delivered = !socket.destroyed));
    const closed = new Promise<void>((resolve) =>
      res.once('close', () => {
        if (!flight.delivered)
          flight.upstream.cancel(new GatewayError('request_aborted', 'The client closed the request')); // client gone
        resolve();
      }),
    );

    try {
      const pending = this.deps.pipeline.run('onRequest', gw);
      if (pending) await pending;
      flight.explicit = gw.header('x-gateway-provider');
      if (endpoint.key === 'models' && flight.explicit === undefined) this.sendCatalog(gw, res);
      else await this.forward(flight);
    } catch (err) {
      this.fail(gw, res, err);
    }
    await closed;
    await this.finish(flight);
  }

  /**
   * During shutdown a keep-alive connection may still bring a request: it is refused with 503 shutting_down and the
   * connection closed, so the client retries elsewhere. Nothing is forwarded (the upstream pools are closing).
   */
  private refuseWhileDraining(res: ServerResponse): void {
    const body = new GatewayError('shutting_down', 'The gateway is shutting down; retry the request.').toBody();
    res.writeHead(503, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
      'retry-after': '1',
      [REQUEST_ID_HEADER]: newRequestId(),
    });
    res.end(body);
  }

  /** Reads the request's body (core/body-intake.ts), then has it forwarded; what the body holds is freed after. */
  private async forward(flight: InFlight): Promise<void> {
    try {
      await this.intake.read(flight.gw, flight.req, flight.endpoint, flight);
      await this.callAndRelay(flight);
    } finally {
      this.intake.release(flight);
    }
  }

  /** Picks the provider, calls it and relays its answer. */
  private async callAndRelay(flight: InFlight): Promise<void> {
    const { gw, req, res, endpoint, upstream, upload } = flight;
    const provider = this.deps.providers.resolve(endpoint, flight.explicit, gw.model);
    gw.provider = provider;

    // The provider key is held back while plugins run, so no plugin can read or replace it; every other
    // credential (another provider's key, the gateway key, the admin token) is never forwarded (core/credentials.ts).
    const credential = this.credentials.pick(provider, req.headers);
    forwardableRequestHeaders(req.headers, gw.upstreamHeaders, this.credentials.withheld);
    const pending = this.deps.pipeline.run('beforeUpstream', gw);
    if (pending) await pending;
    const headers = upstreamHeadersOf(gw.upstreamHeaders, this.credentials.withheld);
    if (credential) headers[credential.header] = credential.value;

    const target =
      provider.baseUrl + ((endpoint.batch ? undefined : provider.paths?.[endpoint.key]) ?? endpoint.upstreamPath);
    let url = this.upstreamUrls.get(target);
    if (!url) this.upstreamUrls.set(target, (url = new URL(target)));
    const query = req.url?.indexOf('?') ?? -1;
    if (query >= 0) {
      url = new URL(target); // the cached URL is shared: a query string gets its own copy
      url.search = req.url!.slice(query);
    }
    if (upload) headers['content-length'] = String(upload.size);
    gw.sentUpstream = true;
    gw.upstreamSentMs = gw.elapsedMs();
    await this.deps.pools.send(
      {
        url,
        method: endpoint.method,
        headers,
        body: upload ? upload.stream() : gw.body,
        timeouts: provider.timeouts,
        provider: provider.slug,
      },
      upstream,
    );
    gw.ttfbMs = gw.elapsedMs();
    gw.status = gw.upstreamStatus = upstream.statusCode;

    const contentType = (headerValue(upstream.headers, 'content-type') ?? '').toLowerCase();
    const batches = provider.usage.batches;
    if (endpoint.batch === 'results' && batches && upstream.statusCode < 400) {
      // A batch's results are JSON Lines, whatever their type says: relayed as they come, read line by line.
      flight.lines = new LineTap(batches, headerValue(upstream.headers, 'content-encoding'));
      const lines = flight.lines;
      await this.relayStream(gw, res, upstream, (chunk) => lines.push(chunk));
    } else if (isJsonDocument(contentType)) {
      // A JSON document is relayed whole (its usage read), also when a stream was asked for and the provider
      // answered with one; JSON Lines (application/x-ndjson) and SSE are streams.
      await this.relayWhole(gw, res, upstream);
    } else {
      if (contentType.startsWith('text/event-stream') && upstream.statusCode < 400) {
        gw.stream = true; // also when asked with another field than `stream` (audio.speech: stream_format "sse")
        const pipeline = this.deps.pipeline;
        const observe = pipeline.observesStreams ? (e: SseEvent) => pipeline.streamEvent(gw, e) : undefined;
        flight.tap = new StreamTap(
          provider.usage.createStreamAccumulator(endpoint.key),
          headerValue(upstream.headers, 'content-encoding'),
          observe,
        );
      }
      const tap = flight.tap;
      await this.relayStream(gw, res, upstream, tap && ((chunk) => tap.push(chunk)));
    }
  }

  /**
   * A non-streamed JSON answer: read it whole (usage and cost can then go into headers), send it unchanged. While
   * it is held it is reported to the memory policy, as a request body is.
   */
  private async relayWhole(gw: GatewayContext, res: ServerResponse, upstream: UpstreamExchange): Promise<void> {
    const held = bodyHeld(Number(headerValue(upstream.headers, 'content-length')));
    try {
      let body: Buffer;
      try {
        body = await upstream.readAll();
      } catch (err) {
        throw upstreamFailure(err, gw.provider!.slug);
      } finally {
        gw.upstreamDoneMs = gw.elapsedMs();
      }
      gw.responseBody = body;
      if (upstream.statusCode < 400) {
        let parsed = decodeBody(body, headerValue(upstream.headers, 'content-encoding'));
        if (parsed instanceof Promise) parsed = await parsed;
        if (parsed !== undefined) gw.usage = gw.provider!.usage.fromJson(gw.endpoint!.key, parsed);
        if (parsed !== undefined && gw.endpoint!.batch) gw.batchJob = gw.provider!.usage.batches?.job(parsed);
      }
      const pending = this.deps.pipeline.run('onResponse', gw);
      if (pending) await pending;
      res.writeHead(upstream.statusCode, this.responseHeaders(gw, forwardableResponseHeaders(upstream.headers)));
      res.end(body);
    } finally {
      held?.();
    }
  }

  /** Anything else (SSE, audio bytes, errors with odd types): piped chunk by chunk as it arrives. */
  private async relayStream(
    gw: GatewayContext,
    res: ServerResponse,
    upstream: UpstreamExchange,
    watch: ((chunk: Buffer) => void) | undefined,
  ): Promise<void> {
    try {
      const pending = this.deps.pipeline.run('onResponse', gw);
      if (pending) await pending;
    } catch (err) {
      upstream.cancel(asGatewayError(err)); // the answer is refused: stop reading it
      throw err;
    }
    res.writeHead(upstream.statusCode, this.responseHeaders(gw, forwardableResponseHeaders(upstream.headers)));
    try {
      await upstream.relayTo(res, watch);
    } catch (err) {
      gw.streamCut = true;
      // Headers are out: the client sees the stream end early (the socket is cut); the record says why.
      res.destroy();
      gw.error = upstream.cancelled
        ? new GatewayError('request_aborted', 'The client disconnected mid-stream')
        : upstreamFailure(err, gw.provider!.slug);
    } finally {
      gw.upstreamDoneMs = gw.elapsedMs();
    }
  }

  private sendCatalog(gw: GatewayContext, res: ServerResponse): void {
    const body = ModelCatalog.wantsMessagesShape((h) => gw.header(h))
      ? this.deps.catalog.messagesShape
      : this.deps.catalog.openaiShape;
    gw.status = 200;
    res.writeHead(200, this.responseHeaders(gw, { 'content-type': 'application/json', 'content-length': body.length }));
    res.end(body);
  }

  /** Adds the plugins' headers and the request id; a header the provider sent is never replaced. */
  private responseHeaders(gw: GatewayContext, headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
    for (const name in gw.responseHeaders) if (headers[name] === undefined) headers[name] = gw.responseHeaders[name];
    headers[REQUEST_ID_HEADER] = gw.requestId;
    return headers;
  }

  /** Answers with the gateway's own error, unless the answer already started (then the socket is cut). */
  private fail(gw: GatewayContext, res: ServerResponse, err: unknown): void {
    const error = asGatewayError(err);
    gw.error = error;
    if (error.status >= 500 && !EXPECTED_FAILURES.has(error.code)) {
      gw.log.error({ err, requestId: gw.requestId }, 'request failed');
    }
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    gw.status = error.status;
    const body = Buffer.from(error.toBody());
    const headers: OutgoingHttpHeaders = {
      ...error.headers,
      'content-type': 'application/json',
      'content-length': body.length,
    };
    closeAfterRefusal(error.code, res.req, headers);
    res.writeHead(error.status, this.responseHeaders(gw, headers));
    res.end(body);
  }

  /** After the client is done: settle usage, run onComplete and log, all off the request path. */
  private async finish({ gw, delivered, tap, lines }: InFlight): Promise<void> {
    gw.latencyMs = gw.elapsedMs();
    if (!delivered && !gw.error) {
      gw.streamCut = gw.status !== undefined;
      gw.error = new GatewayError('request_aborted', 'The client disconnected before the answer was complete');
    }
    try {
      try {
        if (tap) {
          await tap.end();
          gw.usage = tap.result();
        }
        if (lines) {
          await lines.end();
          gw.batchResults = lines.results();
        }
        settleUsage(gw, () => tap?.text() ?? '');
        await this.deps.settleRequestUsage?.(gw);
      } catch (err) {
        // Usage stays as reported (or unknown), but the request is still recorded.
        gw.log.warn({ err, requestId: gw.requestId }, 'settling usage failed');
      }
      await this.deps.pipeline.complete(gw);
      this.logLine(gw);
    } catch (err) {
      gw.log.error({ err, requestId: gw.requestId }, 'completing the request failed');
    } finally {
      if (--this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** One structured line per request. Never headers, never bodies: nothing secret can reach the log. */
  private logLine(gw: GatewayContext): void {
    this.requestLog.info(
      {
        requestId: gw.requestId,
        method: gw.method,
        path: gw.path,
        status: gw.status,
        provider: gw.provider?.slug,
        model: gw.model,
        stream: gw.stream,
        workspace: gw.workspace?.id,
        keyId: gw.keyId,
        latencyMs: Math.round(gw.latencyMs * 100) / 100,
        ttfbMs: gw.ttfbMs === undefined ? undefined : Math.round(gw.ttfbMs * 100) / 100,
        error: gw.error?.code,
        cut: gw.streamCut || undefined,
      },
      'request',
    );
  }

  /** Resolves when no request is in flight (used by graceful shutdown). */
  idle(): Promise<void> {
    return this.inflight === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
