import { createServer, type Server } from 'node:http';
import { MAX_REQUEST_HEADERS, refuseHeaderFlood } from './header-count';
import type { AddressInfo } from 'node:net';
import type { LoadedConfig } from '../config/load';
import { createAdminApp } from '../admin/app';
import { ReconcileSchedule } from '../reconcile/schedule';
import { AdminReads } from '../admin/reads/admin-reads';
import { createGateway, type Gateway, type GatewayOptions } from './gateway';
import { limitHeapGrowth } from './memory-policy';
import { boundPipelining, MAX_QUEUED_PER_CONNECTION } from './pipelining';
import { metricsScrapeOf } from './observability/open-metrics';

export interface RunningGateway {
  gateway: Gateway;
  server: Server;
  /** http://host:port of the proxy listener. */
  url: string;
  /** http://host:port of the admin listener; undefined when no admin token is configured. */
  adminUrl: string | undefined;
  /** Stops accepting, lets in-flight requests and streams finish (up to the grace period), then closes. */
  stop(): Promise<void>;
}

/** The admin API's read limits (admin.query_timeout_ms, admin.exports_max). */
const readsOptions = (admin: LoadedConfig['config']['admin']) => ({
  timeoutMs: admin.query_timeout_ms,
  exportsMax: admin.exports_max,
});

export async function startGateway(loaded: LoadedConfig, options: GatewayOptions = {}): Promise<RunningGateway> {
  const { config } = loaded;
  // Before the gateway starts anything: the setting applies to every heap of the process from its next collection.
  limitHeapGrowth(config.server.heap_growth_percent);
  const gateway = await createGateway(loaded, options);
  for (const warning of loaded.warnings ?? []) gateway.logger.warn(warning);
  const pipelining = { maxQueued: MAX_QUEUED_PER_CONNECTION, inFlight: config.server.pipelined_in_flight };
  const server = createServer(refuseHeaderFlood(boundPipelining(gateway.koa.callback(), pipelining)));
  server.maxHeadersCount = MAX_REQUEST_HEADERS + 1; // one more than allowed, so that a flood is seen and refused
  server.keepAliveTimeout = 65_000; // longer than common load-balancer idle time-outs, so they close first
  const url = await listen(server, config.server.host, config.server.port);

  let admin: Server | undefined;
  let adminUrl: string | undefined;
  const reconciles = config.reconcile.schedule.enabled && Object.keys(config.reconcile.providers).length > 0;
  const reads =
    config.admin.token || reconciles
      ? AdminReads.open(gateway.store.readSource(), readsOptions(config.admin))
      : undefined;
  const schedule = reconciles ? startReconcileSchedule(gateway, loaded, reads!) : undefined;
  if (config.admin.token && reads) {
    const { lockout } = config.admin;
    gateway.alerts.readThrough(reads);
    const budgetReads = reads;
    gateway.metrics?.watchBudgets({
      list: (now) => gateway.budgets.list(now, budgetReads),
      forecastPico: (b, now) => gateway.alerts.forecastOf(b, now)?.projectedPico ?? null,
    });
    gateway.metrics?.watchReconciliation(
      () => budgetReads.reconciliationDrifts(),
      gateway.providers.list().map((p) => p.slug),
    );
    const app = createAdminApp({
      store: gateway.store,
      reads,
      token: config.admin.token,
      logger: gateway.logger,
      workspaces: config.workspaces,
      budgets: gateway.budgets,
      alerts: gateway.alerts,
      freezes: gateway.freezes,
      onKeysChanged: () => gateway.keySync.refresh(),
      runtimeBudgets: runtimeBudgetRoutesOf(gateway),
      proxyUrl: url,
      lockout: lockout.enabled && {
        maxFailures: lockout.max_failures,
        windowMs: lockout.window_ms,
        blockMs: lockout.block_ms,
      },
      probes: gateway.probes,
      metrics: gateway.metrics && {
        scrape: metricsScrapeOf(gateway.metrics),
        open: config.metrics.auth === 'none',
        token: config.metrics.token,
        errorAnswered: (code) => gateway.metrics?.adminError(code),
      },
    });
    admin = createServer(app.callback());
    adminUrl = await listen(admin, config.admin.host, config.admin.port);
  } else {
    gateway.logger.warn('admin API is off: set admin.token (e.g. TOLLGATE_ADMIN_TOKEN) to enable it');
  }

  let stopping: Promise<void> | undefined;
  // The admin listener stays up while requests drain, so /readyz says draining and /metrics follows the drain; it
  // closes before the store does.
  const stop = () =>
    (stopping ??= (async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      await gateway.drain();
      if (admin) {
        admin.close();
        admin.closeAllConnections();
      }
      await gateway.alerts.stop(); // before its reader closes
      await schedule?.stop();
      await reads?.close();
      await gateway.close();
      server.closeAllConnections();
      await closed;
    })());
  return { gateway, server, url, adminUrl, stop };
}

async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { address, port: bound } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${bound}`;
}

/** The daily reconciliation (reconcile/schedule.ts), reading the gateway's totals and records through the reader thread. */
function startReconcileSchedule(gateway: Gateway, { config }: LoadedConfig, reads: AdminReads): ReconcileSchedule {
  const schedule = new ReconcileSchedule({
    reconcile: config.reconcile,
    alerts: config.alerts,
    store: gateway.store,
    queryUsage: (q) => reads.queryUsage(q),
    listRequests: (q) => reads.generationPage(q),
    logger: gateway.logger,
  });
  schedule.start();
  return schedule;
}

/** The admin API's budget writes, applied on this instance as soon as they are stored. */
function runtimeBudgetRoutesOf(gateway: Gateway) {
  const table = gateway.store.runtimeBudgets?.();
  const sync = gateway.runtimeBudgets;
  return table && sync ? { table, onBudgetsChanged: () => sync.refresh() } : undefined;
}
