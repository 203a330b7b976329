import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BodyReader } from './body-reader';
import { GatewayContext, secretHeadersFor } from './context';
import { UpstreamCredentials, type GatewaySecretCheck } from './credentials';
import type { EndpointSpec } from './endpoints';
import { GatewayError } from './errors';
import { forwardableRequestHeaders, upstreamHeadersOf } from './headers';
import type { InFlight } from './in-flight';
import { answerWithError, refuseWhileDraining, withGatewayHeaders } from './own-answers';
import type { PluginPipeline } from './plugin-pipeline';
import type { ProviderRegistry } from './provider-routing';
import { relayAnswer } from './relay';
import { endRequest, type RequestEndDeps } from './request-end';
import { newRequestId } from './request-id';
import type { UpstreamPools } from './upstream';
import { UpstreamExchange } from './upstream-exchange';

/** What the proxy works with. */
export interface ProxyDeps {
  providers: ProviderRegistry;
  /** Reads request bodies within the gateway's limits (intake/body-intake.ts). */
  bodies: BodyReader;
  pipeline: PluginPipeline;
  pools: UpstreamPools;
  /** The gateway's own GET /v1/models (no X-Gateway-Provider), in the shape the request's headers ask for. */
  modelList: (header: (name: string) => string | undefined) => Buffer;
  logger: Logger;
  /** True for a gateway key or the admin token: never sent upstream, even in a provider's credential header. */
  isGatewaySecret?: GatewaySecretCheck;
  /**
   * Completes a request's usage once the client is done: estimates what a stream did not report (`streamedText`:
   * what it sent), adds what an audio or image request says about its units (providers/usage-settle.ts). Absent:
   * the usage is what the answer reported.
   */
  settleUsage?: (gw: GatewayContext, streamedText: () => string) => Promise<void> | undefined;
}

/**
 * The whole request flow, step by step:
 *   onRequest -> read body (ProxyDeps.bodies) -> resolve provider -> beforeUpstream -> upstream call
 *   -> onResponse and relay (core/relay.ts) -> [client done] -> usage, onComplete, log line (core/request-end.ts).
 * A refusal at any step is answered by core/own-answers.ts.
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

  /** Upstream URLs per provider base URL and path, parsed once (a few dozen at most). */
  private readonly upstreamUrls = new Map<string, URL>();
  /** Request headers no plugin may read: credentials, and the key header of every deployed provider. */
  private readonly secretHeaders: ReadonlySet<string>;
  /** Which credential header goes to which provider. */
  private readonly credentials: UpstreamCredentials;
  private readonly ending: RequestEndDeps;

  constructor(private readonly deps: ProxyDeps) {
    this.secretHeaders = secretHeadersFor(deps.providers.list().flatMap((p) => p.auth.headers));
    this.credentials = new UpstreamCredentials(deps.providers.list(), deps.isGatewaySecret);
    this.ending = {
      pipeline: deps.pipeline,
      requestLog: deps.logger.child({}, { redact: [] }),
      settleUsage: deps.settleUsage,
    };
  }

  async handle(req: IncomingMessage, res: ServerResponse, endpoint: EndpointSpec): Promise<void> {
    if (this.draining) return refuseWhileDraining(res);
    const flight = this.start(req, res, endpoint);
    const { gw } = flight;
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
      answerWithError(gw, res, err);
    }
    await closed;
    try {
      await endRequest(flight, this.ending);
    } finally {
      if (--this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** A new request's context and in-flight record, before anything is read. */
  private start(req: IncomingMessage, res: ServerResponse, endpoint: EndpointSpec): InFlight {
    const gw = new GatewayContext(
      newRequestId(),
      req.method ?? 'GET',
      endpoint.path,
      endpoint,
      req.headers,
      this.deps.logger,
      this.secretHeaders,
      req.rawHeaders,
    );
    gw.clientAddress = req.socket.remoteAddress;
    return {
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
  }

  /** Reads the request's body (ProxyDeps.bodies), then has it forwarded; what the body holds is freed after. */
  private async forward(flight: InFlight): Promise<void> {
    try {
      await this.deps.bodies.read(flight.gw, flight.req, flight.endpoint, flight);
      await this.callUpstream(flight);
      await relayAnswer(flight, this.deps.pipeline);
    } finally {
      this.deps.bodies.release(flight);
    }
  }

  /** Picks the provider, runs beforeUpstream and calls the provider, until its status and headers are in. */
  private async callUpstream(flight: InFlight): Promise<void> {
    const { gw, req, endpoint, upstream, upload } = flight;
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
    if (upload) headers['content-length'] = String(upload.size);
    gw.sentUpstream = true;
    gw.upstreamSentMs = gw.elapsedMs();
    await this.deps.pools.send(
      {
        url: this.upstreamUrl(target, req.url),
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
  }

  /** The upstream URL, parsed once per target; a request with a query string gets its own copy. */
  private upstreamUrl(target: string, requestUrl: string | undefined): URL {
    let url = this.upstreamUrls.get(target);
    if (!url) this.upstreamUrls.set(target, (url = new URL(target)));
    const query = requestUrl?.indexOf('?') ?? -1;
    if (query < 0) return url;
    const own = new URL(target); // the cached URL is shared
    own.search = requestUrl!.slice(query);
    return own;
  }

  private sendCatalog(gw: GatewayContext, res: ServerResponse): void {
    const body = this.deps.modelList((h) => gw.header(h));
    gw.status = 200;
    res.writeHead(200, withGatewayHeaders(gw, { 'content-type': 'application/json', 'content-length': body.length }));
    res.end(body);
  }

  /** Resolves when no request is in flight (used by graceful shutdown). */
  idle(): Promise<void> {
    return this.inflight === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
