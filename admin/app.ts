import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { asGatewayError, GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { WorkspaceEntry } from '../config/schema';
import { registerKeyRoutes } from './key-routes';
import { budgetListPage } from './budget-list';
import { registerAlertRoutes } from './alert-routes';
import { registerBudgetRoutes } from './budget-routes';
import { registerReconciliationRoutes } from './reconciliation-routes';
import type { RuntimeBudgetTable } from '../storage/runtime-budget-table';
import type { AlertService } from '../alerts/service';
import type { SpendFreezes } from '../services/spend-freezes';
import { registerFreezeRoutes } from './freeze-routes';
import type { LockoutOptions } from '../plugin-kit/lockout';
import { adminAuth } from './admin-auth';
import type { BudgetLedger } from '../services/budget-ledger';
import type { UsageStore } from '../storage/store';
import { isStoreUnreachable } from '../storage/store-errors';
import { cursorFrom, filterFrom, limitFrom, queryValue, usageParamsFrom } from './query-params';
import type { AdminReads } from './reads/admin-reads';
import { registerDashboardRoutes } from './dashboard/api';
import { dashboardStatic } from './dashboard/serve';
import { openApiRoutes } from './openapi/serve';
import { metricsRoutes, type AdminMetrics } from './metrics-route';

/** Seconds a client is asked to wait before retrying a read the store could not answer (the probes recheck each second). */
const STORE_RETRY_AFTER_S = 5;

const storeUnavailable = (cause: unknown) =>
  new GatewayError('store_unavailable', 'The usage store cannot be reached; try again shortly', {
    headers: { 'retry-after': String(STORE_RETRY_AFTER_S) },
    cause,
  });

/**
 * The admin API: usage grouped any way, raw records. It runs on its own listener (never on the proxy port)
 * and every route needs the admin token as `Authorization: Bearer <token>` or `X-Admin-Token`, except its
 * OpenAPI description (GET /api/openapi.json, admin/openapi/), the dashboard's static files and the probes
 * (/healthz, /readyz). GET /metrics takes the admin token or the scrape-only metrics.token (none with
 * metrics.auth: none).
 * Every read goes through `reads` (admin/reads/): off the proxy's event loop, within the query time limit, and each
 * answer bounded (a page of groups, records, keys or budgets).
 */
/** The methods the routes at `path` take (405 method_not_allowed names them in Allow); none for an unknown path. */
function methodsOf(router: Router, path: string): string[] {
  return [...new Set(router.match(path, 'GET').path.flatMap((layer) => layer.methods))];
}

export interface AdminDeps {
  /** Writes (keys created or revoked). */
  store: UsageStore;
  reads: AdminReads;
  token: string;
  logger: Logger;
  workspaces: readonly WorkspaceEntry[];
  budgets: BudgetLedger;
  /** GET /api/alerts, POST /api/alerts/test, and the forecasts in GET /api/budgets; absent: no alerts. */
  alerts?: AlertService;
  /** GET /api/freezes, DELETE /api/freezes/:id; absent when the store keeps no freezes. */
  freezes?: SpendFreezes;
  /** Called after a key was created or revoked here, so this instance applies it at once. */
  onKeysChanged: () => Promise<void>;
  /** POST/PATCH/DELETE /api/budgets; absent when the store keeps no runtime budgets. */
  runtimeBudgets?: { table: RuntimeBudgetTable; onBudgetsChanged: () => Promise<void> };
  /** http://host:port of the proxy listener, shown by the dashboard's first-request instructions. */
  proxyUrl?: string;
  /** Wrong-token lockout per client address (ADMIN_LOCKOUT_DEFAULTS unless given); false turns it off. */
  lockout?: Partial<LockoutOptions> | false;
  /** GET /healthz and /readyz (runtime/observability/probes.ts), answered without a token. */
  probes?: Router;
  /** GET /metrics; absent when metrics are off. */
  metrics?: AdminMetrics;
}

export function createAdminApp({
  store,
  reads,
  token,
  logger,
  workspaces,
  budgets,
  alerts,
  freezes,
  onKeysChanged,
  runtimeBudgets,
  proxyUrl,
  lockout,
  probes,
  metrics,
}: AdminDeps): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router({ prefix: '/api' });

  // The dashboard page and its assets (no data in them); its API calls carry the token like any client.
  app.use(dashboardStatic(logger));
  app.use(openApiRoutes().routes());
  if (probes) app.use(probes.routes());
  if (metrics?.open) app.use(metricsRoutes(metrics, logger).routes());
  // Errors in the gateway's shape, for the token check and every route below it.
  app.use(async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        const allowed = methodsOf(router, ctx.path);
        if (allowed.length > 0)
          throw new GatewayError(
            'method_not_allowed',
            `${ctx.method} is not allowed on ${ctx.path.slice(0, 200)}; use ${allowed.join(' or ')}.`,
            { headers: { allow: allowed.join(', ') } },
          );
        throw new GatewayError('route_not_found', `Unknown admin route ${ctx.path.slice(0, 200)}`);
      }
    } catch (err) {
      const error = isStoreUnreachable(err) ? storeUnavailable(err) : asGatewayError(err);
      if (error.status >= 500) logger.error({ err, path: truncate(ctx.path, 200) }, 'admin request failed');
      metrics?.errorAnswered(error.code);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.type = 'application/json';
      ctx.body = error.toBody();
    }
  });
  app.use(adminAuth({ token, scrapeToken: metrics?.token, lockout, logger }));

  router.get('/usage', async (ctx) => {
    ctx.type = 'application/json';
    ctx.body = await reads.usage(usageParamsFrom(ctx.query));
  });

  router.get('/requests', async (ctx) => {
    const query = { ...filterFrom(ctx.query), limit: limitFrom(ctx.query), cursor: cursorFrom(ctx.query) };
    ctx.type = 'application/json';
    ctx.body = await reads.requests(query);
  });

  registerKeyRoutes(router, { store, reads, workspaces, onKeysChanged });

  router.get('/budgets', async (ctx) => {
    ctx.body = await budgetListPage(
      budgets,
      reads,
      { limit: limitFrom(ctx.query), cursor: queryValue(ctx.query, 'cursor') || null },
      Date.now(),
      alerts,
    );
  });
  if (alerts) registerAlertRoutes(router, alerts);
  if (freezes) registerFreezeRoutes(router, freezes);
  if (runtimeBudgets) registerBudgetRoutes(router, { store, workspaces, ...runtimeBudgets });

  registerReconciliationRoutes(router, reads);
  registerDashboardRoutes(router, { reads, workspaces, proxyUrl });
  app.use(router.routes());
  if (metrics && !metrics.open) app.use(metricsRoutes(metrics, logger).routes());
  return app;
}
