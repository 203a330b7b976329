import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
import { observeBodyMemory } from '../core/body-memory';
import { BufferedBodyCap } from './buffered-body-cap';
import { bodyMemoryPolicy } from './memory-policy';
import { bootstrapKeys } from './key-bootstrap';
import type { KeyRing } from '../services/keys/key-ring';
import { createLogger } from './logger';
import { createPipeline } from './loading/plugin-list';
import type { PluginPipeline } from '../core/plugin-pipeline';
import type { ProviderModule } from '../core/provider-contract';
import { prepareWiring, type Wiring } from './wiring';
import { buildProxy, openUploadSpool, proxyApp } from './proxy-app';
import type { ProviderRegistry } from '../core/provider-routing';
import { GatewayProxy } from '../core/proxy';
import { registerService, TOKENS } from '../contracts/tokens';
import { LimitsContext } from '../services/workspace-limits';
import { RuntimeBudgetSync } from '../services/runtime-budget-sync';
import { SpendFreezes } from '../services/spend-freezes';
import { spendGuard } from './spend-guard';
import { workerScopedPath } from './worker-slot';
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
  const wiring = await prepareWiring(loaded, options.providers);
  const { providers, prices } = wiring;
  const logger = options.logger ?? createLogger(config.logging.level);
  observeBodyMemory(bodyMemoryPolicy);
  const services = registerServices(loaded, wiring, logger);
  const { container, requestCost, limitStore } = services;
  // Both load their libraries only when on (prom-client; the OpenTelemetry SDK).
  const metrics = openMetrics(config.metrics, requestCost);
  const tracing = openTracing(options.env ?? process.env, requestCost, logger);
  const uploads = openUploadSpool(loaded, logger);
  // Raises through the alert service made below, once started (after it).
  const raiseAnomalies = (a: readonly AlertInput[]) => alerts.raise(...a);
  const opened = await openResources({ loaded, options, services, raiseAnomalies, logger });
  const { store, recordQueues, keys } = opened;
  // The observers: tracing first (its span starts before any plugin runs), metrics with onComplete only (it sees
  // every request, refused ones too). Neither is in the YAML list; off, neither is in the pipeline.
  // The spend guard after tracing: its refusal is traced like any other.
  const observers = {
    first: [...(tracing ? [tracing.observer()] : []), spendGuard(opened.freezes, opened.anomalies, requestCost)],
    last: metrics ? [metrics.observer()] : [],
  };
  const pipeline = await createPipeline(wiring.pipeline, container, observers).catch(async (err) => {
    await closeResources(opened, limitStore);
    throw err;
  });
  if (metrics) watchStores(metrics, recordQueues, limitStore);
  const { proxy, pools, bufferedBodies } = buildProxy({
    loaded,
    providers,
    prices,
    pipeline,
    keys,
    logger,
    metrics,
    uploads,
  });
  const readiness = readinessOf(config, { store, recordQueues, limitStore, proxy, logger });
  const probes = probeRoutes(readiness);
  const koa = proxyApp(proxy, probes, logger, (key) => keys.holds(key));
  const { records_days: recordsDays, batch_size: batchSize, pause_ms: pauseMs } = config.storage.retention;
  const maintenance = new StoreMaintenance(store, { recordsDays, batchSize, pauseMs }, logger);
  maintenance.start();
  const alerts = new AlertService(config.alerts, store.alertOutbox?.(), services.budgets, logger);
  alerts.start();
  metrics?.watchAlerts(() => alerts.deliveryCounts());
  opened.anomalies.start(store);
  metrics?.watchAnomalies(() => opened.freezes?.activeCount(Date.now()) ?? 0, opened.anomalies.fired);

  const { drain, close } = lifecycle(config.server.shutdown_grace_ms, {
    proxy,
    maintenance,
    opened,
    alerts,
    pipeline,
    pools,
    limitStore,
    logger,
  });

  const { keySync, runtimeBudgets, freezes, anomalies } = opened;
  const { budgets } = services;
  return {
    koa,
    proxy,
    container,
    providers,
    store,
    pools,
    logger,
    keySync,
    runtimeBudgets,
    budgets,
    alerts,
    freezes,
    anomalies,
    probes,
    readiness,
    bufferedBodies,
    metrics,
    drain,
    close,
  };
}

/** The services every plugin may ask for, in a child container of the gateway's own. */
function registerServices(loaded: LoadedConfig, wiring: Wiring, logger: Logger) {
  const { config } = loaded;
  const container = rootContainer.createChildContainer();
  registerService(container, TOKENS.Config, config);
  registerService(container, TOKENS.Logger, logger);
  registerService(container, TOKENS.ConfigDir, loaded.dir);
  registerService(container, TOKENS.ProcessFilePath, workerScopedPath);
  registerService(container, TOKENS.Clock, systemClock);
  registerService(container, TOKENS.Providers, wiring.providers);
  registerService(container, TOKENS.PriceCatalog, wiring.prices);
  const requestCost = new RequestCost(wiring.prices);
  registerService(container, TOKENS.RequestCost, requestCost);
  const limitStore = openLimitStore(config.limit_store, logger);
  registerService(container, TOKENS.LimitStore, limitStore);
  const workspaceLimits = new LimitsContext(config, limitStore, config.limit_store, logger);
  registerService(container, TOKENS.WorkspaceLimits, workspaceLimits);
  const budgets = new BudgetLedger();
  registerService(container, TOKENS.BudgetLedger, budgets);
  return { container, requestCost, limitStore, workspaceLimits, budgets };
}
type Services = ReturnType<typeof registerServices>;

interface Resources {
  store: UsageStore;
  recordQueues: ReturnType<typeof recordQueuesOver>;
  keys: KeyRing;
  keySync: KeySync;
  runtimeBudgets: RuntimeBudgetSync | undefined;
  freezes: SpendFreezes | undefined;
  anomalies: AnomalyWatch;
}

/** Opens the store and what reads it in the background; a failed start closes what was opened, never leaks it. */
async function openResources(args: {
  loaded: LoadedConfig;
  options: GatewayOptions;
  services: Services;
  raiseAnomalies: (alerts: readonly AlertInput[]) => Promise<void>;
  logger: Logger;
}): Promise<Resources> {
  const { loaded, options, services, logger } = args;
  const { config } = loaded;
  const { container, limitStore } = services;
  const opened: Partial<Resources> = {};
  try {
    const store = await openStore(storageUrlFrom(config.storage.url, loaded.dir), {
      schema: config.storage.schema,
      logger,
    });
    opened.store = store;
    registerService(container, TOKENS.UsageStore, store);
    const fallback = config.storage.spill_fallback;
    const recordQueues = recordQueuesOver(store, logger, fallback && resolve(loaded.dir, fallback));
    opened.recordQueues = recordQueues;
    registerService(container, TOKENS.RecordQueues, recordQueues);

    const keys = await bootstrapKeys(config.workspaces, store, options.announce ?? ((m) => process.stderr.write(m)));
    opened.keys = keys;
    registerService(container, TOKENS.KeyRing, keys);
    opened.keySync = new KeySync(keys, store, config.workspaces, logger, { limitStore: config.limit_store });
    opened.keySync.start();
    const budgetTable = store.runtimeBudgets?.();
    if (budgetTable) {
      const refreshMs = config.budgets.runtime_refresh_ms;
      opened.runtimeBudgets = new RuntimeBudgetSync(budgetTable, services.workspaceLimits, logger, refreshMs);
      // Read once before the plugins are made, so the first request already counts against them.
      await opened.runtimeBudgets.start();
    }
    const freezeTable = store.spendFreezes?.();
    if (freezeTable) {
      opened.freezes = new SpendFreezes(freezeTable, logger, config.budgets.runtime_refresh_ms);
      await opened.freezes.start();
    }
    const { anomalies: rules, evaluate_every_ms: everyMs } = config.alerts;
    opened.anomalies = new AnomalyWatch(rules, args.raiseAnomalies, opened.freezes, everyMs, logger);
    return opened as Resources;
  } catch (err) {
    await closeResources(opened, limitStore);
    throw err;
  }
}

/** drain() stops taking requests and waits for those in flight; close() drains, then stops and closes everything. */
function lifecycle(
  defaultGraceMs: number,
  parts: {
    proxy: GatewayProxy;
    maintenance: StoreMaintenance;
    opened: Resources;
    alerts: AlertService;
    pipeline: PluginPipeline;
    pools: UpstreamPools;
    limitStore: Services['limitStore'];
    logger: Logger;
  },
): Pick<Gateway, 'drain' | 'close'> {
  const { proxy, maintenance, opened, alerts, pipeline, pools, limitStore, logger } = parts;
  let draining: Promise<void> | undefined;
  const drain = (graceMs = defaultGraceMs) =>
    (draining ??= (async () => {
      proxy.draining = true;
      maintenance.stop();
      await Promise.race([proxy.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    })());
  let closing: Promise<void> | undefined;
  const close = (graceMs = defaultGraceMs) =>
    (closing ??= (async () => {
      await drain(graceMs);
      await opened.anomalies.stop();
      await alerts.stop();
      await opened.keySync.stop();
      await opened.runtimeBudgets?.stop();
      await opened.freezes?.stop();
      await pipeline.close();
      await pools.close();
      await limitStore.close();
      await opened.store.close();
      logger.flush();
    })());
  return { drain, close };
}

/** The store gauges: the write queue (opened by the usage recorder as the pipeline was made) and Redis. */
function watchStores(
  metrics: GatewayMetrics,
  recordQueues: Resources['recordQueues'],
  limitStore: Services['limitStore'],
) {
  const writeQueue = recordQueues.opened()[0];
  if (writeQueue) metrics.watchWriteQueue(() => writeQueue.stats());
  if (limitStore instanceof RedisLimitStore) metrics.watchRedis(() => limitStore.connected);
}

/** Stops the background readers and closes the stores, whatever was opened; errors at this point are not news. */
async function closeResources(opened: Partial<Resources>, limitStore: Services['limitStore']): Promise<void> {
  await opened.keySync?.stop().catch(() => undefined);
  await opened.runtimeBudgets?.stop().catch(() => undefined);
  await opened.freezes?.stop().catch(() => undefined);
  await limitStore.close().catch(() => undefined);
  await opened.store?.close().catch(() => undefined);
}

/** A relative SQLite path is relative to the config file, and its folder is created on first start. */
export function storageUrlFrom(url: string, configDir: string): string {
  const target = parseStorageUrl(url);
  if (target.kind !== 'sqlite' || target.path === ':memory:') return url;
  const path = resolve(configDir, target.path);
  mkdirSync(dirname(path), { recursive: true });
  return `sqlite:${path}`;
}

/** Readiness: the store's writes, Redis when limits fail closed on it (or as probes.readiness.fail_on says), draining. */
function readinessOf(
  config: LoadedConfig['config'],
  parts: Pick<Resources, 'store' | 'recordQueues'> & {
    limitStore: Services['limitStore'];
    proxy: GatewayProxy;
    logger: Logger;
  },
): Readiness {
  const { store, recordQueues, limitStore, proxy, logger } = parts;
  return new Readiness({
    storeWritable: async () => {
      await store.checkWritable();
      // What the last writes met: a full disk or a read-only file is seen by a write, not by a permission check.
      const refused = recordQueues.opened().find((q) => q.stats().writesRefused !== null);
      if (refused) throw new Error(`the usage store refuses writes (${refused.stats().writesRefused})`);
    },
    limitStorePing: limitStore instanceof RedisLimitStore ? () => limitStore.ping() : undefined,
    draining: () => proxy.draining,
    failOn: new Set(
      config.probes.readiness.fail_on ?? (config.limit_store.on_error === 'closed' ? ['limit_store'] : []),
    ),
    logger,
  });
}
