import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import type { LoadedConfig } from '../config/load';
import { RequestCost } from '../services/request-cost';
import { BudgetLedger } from '../services/budget-ledger';
import { AlertService } from '../alerts/service';
import { AnomalyWatch } from '../alerts/anomaly-watch';
import type { AlertInput } from '../alerts/alert';
import { recordQueuesOver } from '../services/record-queues';
import { systemClock } from '../contracts/clock';
import { openLimitStore } from '../services/limit-store/open';
import { KeySync } from '../services/keys/key-sync';
import { openStore, parseStorageUrl } from '../storage';
import { StoreMaintenance } from '../storage/maintenance';
import type { UsageStore } from '../storage/store';
import { endpointFor, methodsAt } from '../core/endpoints';
import { GatewayError } from '../core/errors';
import { observeBodyMemory } from '../core/body-memory';
import { BufferedBodyCap } from './buffered-body-cap';
import { bodyMemoryPolicy } from './memory-policy';
import { bootstrapKeys } from './key-bootstrap';
import { gatewaySecretCheck } from './gateway-secrets';
import type { KeyRing } from '../services/keys/key-ring';
import { createLogger } from './logger';
import type { PluginPipeline } from '../core/plugin-pipeline';
import { createPipeline } from './loading/plugin-list';
import type { ProviderModule } from '../core/provider-contract';
import { prepareWiring } from './wiring';
import type { ProviderRegistry } from '../core/provider-routing';
import { GatewayProxy } from '../core/proxy';
import { BodyIntake } from '../intake/body-intake';
import { newRequestId, REQUEST_ID_HEADER } from '../core/request-id';
import { registerService, TOKENS } from '../contracts/tokens';
import { LimitsContext } from '../services/workspace-limits';
import { RuntimeBudgetSync } from '../services/runtime-budget-sync';
import { SpendFreezes } from '../services/spend-freezes';
import { spendGuard } from './spend-guard';
import { workerScopedPath } from './worker-slot';
import { UploadSpool } from '../services/upload-spool';
import { ModelCatalog } from '../providers/model-catalog';
import { settleUsage } from '../providers/usage-settle';
import { uploadHeadBytes } from '../providers/wire/media-request';
import { UpstreamPools } from '../core/upstream';
import { RedisLimitStore } from '../services/limit-store/redis-store';
import type { GatewayMetrics } from './observability/metrics';
import { openMetrics } from './observability/open-metrics';
import { probeRoutes } from './observability/probes';
import { Readiness } from './observability/readiness';
import { openTracing } from './observability/tracing';

export interface GatewayOptions {
  logger?: Logger;
  /** Provider modules written in code, in addition to the built-ins. */
  providers?: Record<string, ProviderModule>;
  /** Where a bootstrap key is announced (default: stderr). */
  announce?: (message: string) => void;
  /** Where the OTEL_* variables are read (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface Gateway {
  koa: Koa;
  proxy: GatewayProxy;
  container: DependencyContainer;
  providers: ProviderRegistry;
  store: UsageStore;
  pools: UpstreamPools;
  logger: Logger;
  keySync: KeySync;
  /** Reads the budgets managed through the admin API; absent when the store holds none. */
  runtimeBudgets: RuntimeBudgetSync | undefined;
  /** Budgets seen by this instance, for the admin API. */
  budgets: BudgetLedger;
  /** Budget alerts: evaluated and delivered in the background (docs/alerts.md). */
  alerts: AlertService;
  /** Scopes frozen after a spend anomaly, read from the store in the background; absent when the store keeps none. */
  freezes: SpendFreezes | undefined;
  /** The spend-anomaly rules (alerts.anomalies) at work. */
  anomalies: AnomalyWatch;
  /** GET /healthz and /readyz, for the admin listener (the proxy's Koa app answers them already). */
  probes: Router;
  readiness: Readiness;
  /** Request-body bytes held in memory by the requests in flight, and their bound (server.max_buffered_bytes). */
  bufferedBodies: BufferedBodyCap;
  /** The Prometheus metrics; undefined when metrics.enabled is false. */
  metrics: GatewayMetrics | undefined;
  /** Refuses new requests (readiness says draining) and waits for those in flight, up to graceMs. */
  drain(graceMs?: number): Promise<void>;
  /** Drains, then closes plugins, pools and the store. */
  close(graceMs?: number): Promise<void>;
}

/** The composition root: everything is wired here, from the validated gateway.config.yaml. */
export async function createGateway(loaded: LoadedConfig, options: GatewayOptions = {}): Promise<Gateway> {
  const { config } = loaded;
  // Everything that could refuse the configuration is checked before anything is opened (the store, a key).
  const { providers, prices, pipeline: planned } = await prepareWiring(loaded, options.providers);
  const logger = options.logger ?? createLogger(config.logging.level);
  observeBodyMemory(bodyMemoryPolicy);
  const container = rootContainer.createChildContainer();
  registerService(container, TOKENS.Config, config);
  registerService(container, TOKENS.Logger, logger);
  registerService(container, TOKENS.ConfigDir, loaded.dir);
  registerService(container, TOKENS.ProcessFilePath, workerScopedPath);
  registerService(container, TOKENS.Clock, systemClock);

  registerService(container, TOKENS.Providers, providers);
  registerService(container, TOKENS.PriceCatalog, prices);
  const requestCost = new RequestCost(prices);
  registerService(container, TOKENS.RequestCost, requestCost);
  // Both load their libraries only when on (prom-client; the OpenTelemetry SDK).
  const metrics = openMetrics(config.metrics, requestCost);
  const tracing = openTracing(options.env ?? process.env, requestCost, logger);
  const { upload_spool_from: spoolFrom, upload_spool_dir: spoolDir } = config.server;
  const uploads =
    spoolFrom === false
      ? undefined
      : UploadSpool.create(resolve(loaded.dir, spoolDir ?? join(tmpdir(), 'tollgate-uploads')), spoolFrom, logger);
  const limitStore = openLimitStore(config.limit_store, logger);
  registerService(container, TOKENS.LimitStore, limitStore);
  const workspaceLimits = new LimitsContext(config, limitStore, config.limit_store, logger);
  registerService(container, TOKENS.WorkspaceLimits, workspaceLimits);
  const budgets = new BudgetLedger();
  registerService(container, TOKENS.BudgetLedger, budgets);
  // Raises through the alert service made below, once started (after it).
  const raiseAnomalies = (a: readonly AlertInput[]) => alerts.raise(...a);

  // From here on resources are open: a failed start closes them again instead of leaking them.
  let store: UsageStore | undefined;
  let keySync: KeySync | undefined;
  let runtimeBudgets: RuntimeBudgetSync | undefined;
  let freezes: SpendFreezes | undefined;
  let anomalies: AnomalyWatch | undefined;
  let pipeline: PluginPipeline;
  let keys: KeyRing;
  let recordQueues: ReturnType<typeof recordQueuesOver> | undefined;
  try {
    store = await openStore(storageUrlFrom(config.storage.url, loaded.dir), { schema: config.storage.schema, logger });
    registerService(container, TOKENS.UsageStore, store);
    const fallback = config.storage.spill_fallback;
    recordQueues = recordQueuesOver(store, logger, fallback && resolve(loaded.dir, fallback));
    registerService(container, TOKENS.RecordQueues, recordQueues);

    keys = await bootstrapKeys(config.workspaces, store, options.announce ?? ((m) => process.stderr.write(m)));
    registerService(container, TOKENS.KeyRing, keys);
    keySync = new KeySync(keys, store, config.workspaces, logger, { limitStore: config.limit_store });
    keySync.start();
    const budgetTable = store.runtimeBudgets?.();
    if (budgetTable) {
      runtimeBudgets = new RuntimeBudgetSync(budgetTable, workspaceLimits, logger, config.budgets.runtime_refresh_ms);
      // Read once before the plugins are made, so the first request already counts against them.
      await runtimeBudgets.start();
    }
    const freezeTable = store.spendFreezes?.();
    if (freezeTable) {
      freezes = new SpendFreezes(freezeTable, logger, config.budgets.runtime_refresh_ms);
      await freezes.start();
    }
    const { anomalies: rules, evaluate_every_ms: everyMs } = config.alerts;
    anomalies = new AnomalyWatch(rules, raiseAnomalies, freezes, everyMs, logger);

    // The observers: tracing first (its span starts before any plugin runs), metrics with onComplete only (it sees
    // every request, refused ones too). Neither is in the YAML list; off, neither is in the pipeline.
    // The spend guard after tracing: its refusal is traced like any other.
    pipeline = await createPipeline(planned, container, {
      first: [...(tracing ? [tracing.observer()] : []), spendGuard(freezes, anomalies, requestCost)],
      last: metrics ? [metrics.observer()] : [],
    });
    const writeQueue = recordQueues.opened()[0];
    if (metrics && writeQueue) metrics.watchWriteQueue(() => writeQueue.stats());
    if (metrics && limitStore instanceof RedisLimitStore) metrics.watchRedis(() => limitStore.connected);
  } catch (err) {
    await keySync?.stop().catch(() => undefined);
    await runtimeBudgets?.stop().catch(() => undefined);
    await freezes?.stop().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await limitStore.close().catch(() => undefined);
    throw err;
  }
  const pools = new UpstreamPools({
    connections: config.upstream.connections,
    keepAliveMs: config.upstream.keep_alive_ms,
  });
  const enabled = new Set(providers.list().map((p) => p.slug));
  const catalog = new ModelCatalog(prices.models().filter((m) => enabled.has(m.provider)));
  const isGatewaySecret = gatewaySecretCheck(keys, config.admin.token);
  const { server } = config;
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
    isGatewaySecret,
    settleUsage,
  });
  metrics?.flow.watchInFlight(() => proxy.inflight);

  // The proxy's Koa stack is kept to one middleware: a path lookup that hands the request to the proxy, which
  // writes the response itself (ctx.respond = false) so the upstream's bytes go out untouched. Everything else
  // (unknown paths, wrong methods, HEAD) is answered by the gateway and never proxied.
  const readiness = new Readiness({
    storeWritable: async () => {
      await store!.checkWritable();
      // What the last writes met: a full disk or a read-only file is seen by a write, not by a permission check.
      const refused = recordQueues?.opened().find((q) => q.stats().writesRefused !== null);
      if (refused) throw new Error(`the usage store refuses writes (${refused.stats().writesRefused})`);
    },
    limitStorePing: limitStore instanceof RedisLimitStore ? () => limitStore.ping() : undefined,
    draining: () => proxy.draining,
    failOn: new Set(
      config.probes.readiness.fail_on ?? (config.limit_store.on_error === 'closed' ? ['limit_store'] : []),
    ),
    logger,
  });
  const probes = probeRoutes(readiness);

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
  koa.use(refuseUnknownRoutes(logger));
  const { records_days: recordsDays, batch_size: batchSize, pause_ms: pauseMs } = config.storage.retention;
  const maintenance = new StoreMaintenance(store!, { recordsDays, batchSize, pauseMs }, logger);
  maintenance.start();
  const alerts = new AlertService(config.alerts, store!.alertOutbox?.(), budgets, logger);
  alerts.start();
  metrics?.watchAlerts(() => alerts.deliveryCounts());
  anomalies!.start(store!);
  metrics?.watchAnomalies(() => freezes?.activeCount(Date.now()) ?? 0, anomalies!.fired);

  let draining: Promise<void> | undefined;
  const drain = (graceMs = config.server.shutdown_grace_ms) =>
    (draining ??= (async () => {
      proxy.draining = true;
      maintenance.stop();
      await Promise.race([proxy.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    })());
  let closing: Promise<void> | undefined;
  const close = (graceMs = config.server.shutdown_grace_ms) =>
    (closing ??= (async () => {
      await drain(graceMs);
      await anomalies!.stop();
      await alerts.stop();
      await keySync!.stop();
      await runtimeBudgets?.stop();
      await freezes?.stop();
      await pipeline.close();
      await pools.close();
      await limitStore.close();
      await store!.close();
      logger.flush();
    })());

  return {
    koa,
    proxy,
    container,
    providers,
    store: store!,
    pools,
    logger,
    keySync: keySync!,
    runtimeBudgets,
    budgets,
    alerts,
    freezes,
    anomalies: anomalies!,
    probes,
    readiness,
    bufferedBodies,
    metrics,
    drain,
    close,
  };
}

/** A relative SQLite path is relative to the config file, and its folder is created on first start. */
export function storageUrlFrom(url: string, configDir: string): string {
  const target = parseStorageUrl(url);
  if (target.kind !== 'sqlite' || target.path === ':memory:') return url;
  const path = resolve(configDir, target.path);
  mkdirSync(dirname(path), { recursive: true });
  return `sqlite:${path}`;
}

/**
 * Anything that is not one of the proxied endpoints (core/endpoints.ts) is answered by the gateway itself and never proxied; it gets
 * its log line like any request (no usage record: it reached no workspace).
 */
function refuseUnknownRoutes(logger: Logger): Koa.Middleware {
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
    ctx.type = 'application/json';
    ctx.body = error.toBody();
    logger.info(
      { requestId, method: ctx.method, path: ctx.path.slice(0, 200), status: error.status, error: error.code },
      'request',
    );
  };
}
