/**
 * The proxy and its Koa app: the upstream pools, the body intake with its memory bounds, and one middleware that
 * hands a proxied path to the proxy. Everything else (unknown paths, wrong methods, HEAD) is answered by the gateway
 * and never proxied.
 */
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../config/load';
import { endpointFor, methodsAt } from '../core/endpoints';
import { GatewayError } from '../core/errors';
import { closeLingering } from '../core/lingering-close';
import type { PluginPipeline } from '../core/plugin-pipeline';
import type { ProviderRegistry } from '../core/provider-routing';
import { GatewayProxy } from '../core/proxy';
import { newRequestId, REQUEST_ID_HEADER } from '../core/request-id';
import { UpstreamPools } from '../core/upstream';
import { BodyIntake } from '../intake/body-intake';
import type { PriceCatalog } from '../pricing/catalog';
import { ModelCatalog } from '../providers/model-catalog';
import { settleUsage } from '../providers/usage-settle';
import { uploadHeadBytes } from '../providers/wire/media-request';
import type { KeyRing } from '../services/keys/key-ring';
import { UploadSpool } from '../services/upload-spool';
import { BufferedBodyCap } from './buffered-body-cap';
import { gatewaySecretCheck } from './gateway-secrets';
import type { GatewayMetrics } from './observability/metrics';

/** The spool large uploads go to (server.upload_spool_from), its folder made now: a start fails before opening anything. */
export function openUploadSpool(loaded: LoadedConfig, logger: Logger): UploadSpool | undefined {
  const { upload_spool_from: spoolFrom, upload_spool_dir: spoolDir } = loaded.config.server;
  if (spoolFrom === false) return undefined;
  return UploadSpool.create(resolve(loaded.dir, spoolDir ?? join(tmpdir(), 'tollgate-uploads')), spoolFrom, logger);
}

/** The proxy over its pools and body intake, with the body-memory bound the metrics watch. */
export function buildProxy(parts: {
  loaded: LoadedConfig;
  providers: ProviderRegistry;
  prices: PriceCatalog;
  pipeline: PluginPipeline;
  keys: KeyRing;
  logger: Logger;
  metrics: GatewayMetrics | undefined;
  uploads: UploadSpool | undefined;
}): { proxy: GatewayProxy; pools: UpstreamPools; bufferedBodies: BufferedBodyCap } {
  const { loaded, providers, prices, pipeline, keys, logger, metrics, uploads } = parts;
  const { config } = loaded;
  const { server } = config;
  const pools = new UpstreamPools({
    connections: config.upstream.connections,
    keepAliveMs: config.upstream.keep_alive_ms,
  });
  const enabled = new Set(providers.list().map((p) => p.slug));
  const catalog = new ModelCatalog(prices.models().filter((m) => enabled.has(m.provider)));
  const bufferedBodies = new BufferedBodyCap({
    maxBytes: server.max_buffered_bytes,
    workspaceBytes: server.workspace_buffered_bytes,
    keyBytes: server.key_buffered_bytes,
  });
  metrics?.watchBufferedBodies(() => bufferedBodies.held);
  const proxy = new GatewayProxy({
    providers,
    pipeline,
    pools,
    modelList: (header) => catalog.answerFor(header),
    bodies: new BodyIntake({
      bodyLimit: server.body_limit,
      bodyPace: { timeoutMs: server.body_timeout_ms, minBytesPerSecond: server.body_min_rate },
      uploads,
      memoryBudget: bufferedBodies,
      uploadHeadBytes,
    }),
    logger,
    isGatewaySecret: gatewaySecretCheck(keys, config.admin.token),
    settleUsage,
  });
  metrics?.flow.watchInFlight(() => proxy.inflight);
  return { proxy, pools, bufferedBodies };
}

/**
 * The proxy's Koa stack is kept to one middleware: a path lookup that hands the request to the proxy, which writes
 * the response itself (ctx.respond = false) so the upstream's bytes go out untouched.
 */
export function proxyApp(proxy: GatewayProxy, probes: Router, logger: Logger, holdsKey: (key: string) => boolean): Koa {
  const koa = new Koa();
  koa.silent = true; // errors are logged by the proxy with their request id
  koa.use(function dispatchToProxy(ctx, next) {
    const endpoint = endpointFor(ctx.method, ctx.path);
    if (endpoint === undefined) return next();
    ctx.respond = false;
    return proxy.handle(ctx.req, ctx.res, endpoint);
  });
  // After the proxy's own paths, so proxied requests never look at them: the one exception to "/v1 paths only".
  koa.use(probes.routes());
  koa.use(refuseUnknownRoutes(logger, holdsKey));
  return koa;
}

/**
 * Anything that is not one of the proxied endpoints (core/endpoints.ts) is answered by the gateway itself and never
 * proxied; it gets its log line like any request (no usage record: it reached no workspace). Without a valid gateway
 * key the connection is closed after the answer, as after any keyless refusal (core/errors.ts): the requests a client
 * pipelined behind it are never started.
 */
function refuseUnknownRoutes(logger: Logger, holdsKey: (key: string) => boolean): Koa.Middleware {
  return function refuseUnknownRoute(ctx) {
    const methods = methodsAt(ctx.path).join(', ');
    const error = methods
      ? new GatewayError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use ${methods}.`, {
          headers: { allow: methods },
        })
      : new GatewayError(
          'route_not_found',
          `Unknown path ${ctx.path.slice(0, 200)}. Tollgate serves only the /v1 endpoints it proxies.`,
        );
    const requestId = newRequestId();
    ctx.status = error.status;
    ctx.set(error.headers);
    ctx.set(REQUEST_ID_HEADER, requestId);
    const key = ctx.get('x-gateway-key');
    if (!key || !holdsKey(key)) {
      ctx.set('connection', 'close');
      closeLingering(ctx.req);
    }
    ctx.type = 'application/json';
    ctx.body = error.toBody();
    logger.info(
      { requestId, method: ctx.method, path: ctx.path.slice(0, 200), status: error.status, error: error.code },
      'request',
    );
  };
}
