import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { asGatewayError, GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import { ADMIN_LOCKOUT_DEFAULTS, type WorkspaceEntry } from '../config/schema';
import { parseJsonBody, readBody } from '../core/body';
import { createGatewayKey, keyJson } from './key-admin';
import { addressKey, FailedKeyTracker, type LockoutOptions } from '../core/lockout';
import type { BudgetLedger } from '../runtime/services/budget-ledger';
import { formatUsd } from '../pricing/money';
import type { UsageStore } from '../storage/store';
import { cursorFrom, filterFrom, groupByFrom, intervalFrom, limitFrom, queryValue } from './query-params';
import { groupRowJson, recordJson, retentionJson, totalsJson } from './serialize';
import { registerDashboardRoutes } from './dashboard/api';
import { dashboardStatic } from './dashboard/serve';
import { openApiRoutes } from './openapi/serve';
import { METRICS_PATH, metricsRoutes, type AdminMetrics } from './metrics-route';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The admin API: usage grouped any way, raw records. It runs on its own listener (never on the proxy port)
 * and every route needs the admin token as `Authorization: Bearer <token>` or `X-Admin-Token`, except its
 * OpenAPI description (GET /api/openapi.json, admin/openapi/), the dashboard's static files and the probes
 * (/healthz, /readyz). GET /metrics takes the admin token or the scrape-only metrics.token (none with
 * metrics.auth: none).
 */
export interface AdminDeps {
  store: UsageStore;
  token: string;
  logger: Logger;
  workspaces: readonly WorkspaceEntry[];
  budgets: BudgetLedger;
  /** Called after a key was created or revoked here, so this instance applies it at once. */
  onKeysChanged: () => Promise<void>;
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
  token,
  logger,
  workspaces,
  budgets,
  onKeysChanged,
  proxyUrl,
  lockout,
  probes,
  metrics,
}: AdminDeps): Koa {
  const expected = digest(token);
  const scrapeToken = metrics?.token === undefined ? undefined : digest(metrics.token);
  const failures = lockout === false ? undefined : new FailedKeyTracker({ ...ADMIN_LOCKOUT_DEFAULTS, ...lockout });
  const app = new Koa();
  app.silent = true;
  const router = new Router({ prefix: '/api' });

  // The dashboard page and its assets (no data in them); its API calls carry the token like any client.
  app.use(dashboardStatic(logger));
  app.use(openApiRoutes().routes());
  if (probes) app.use(probes.routes());
  if (metrics?.open) app.use(metricsRoutes(metrics, logger).routes());
  app.use(async (ctx, next) => {
    try {
      const address = addressKey(ctx.req.socket.remoteAddress);
      const left = failures?.blockedFor(address) ?? 0;
      if (left > 0) throw adminBlocked(left);
      const bearer = /^Bearer (.+)$/i.exec(ctx.get('authorization'))?.[1];
      const presented = bearer ?? ctx.get('x-admin-token');
      // Compare digests: constant time, and equal length whatever was sent.
      const presentedDigest = presented ? digest(presented) : undefined;
      const scrape =
        scrapeToken !== undefined &&
        ctx.path === METRICS_PATH &&
        presentedDigest !== undefined &&
        timingSafeEqual(presentedDigest, scrapeToken);
      if (!scrape && (!presentedDigest || !timingSafeEqual(presentedDigest, expected))) {
        if (presentedDigest && failures) {
          const blockMs = failures.fail(address, presentedDigest.toString('base64').slice(0, 12));
          if (blockMs > 0) {
            logger.warn({ address, blockMs }, 'too many wrong admin tokens: client address blocked from the admin API');
            throw adminBlocked(blockMs);
          }
        }
        throw new GatewayError(
          'gateway_key_invalid',
          'Missing or invalid admin token (Authorization: Bearer <token> or X-Admin-Token).',
        );
      }
      await next();
      if (ctx.status === 404 && ctx.body === undefined)
        throw new GatewayError('route_not_found', `Unknown admin route ${ctx.path.slice(0, 200)}`);
    } catch (err) {
      const error = asGatewayError(err);
      if (error.status >= 500) logger.error({ err, path: truncate(ctx.path, 200) }, 'admin request failed');
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.type = 'application/json';
      ctx.body = error.toBody();
    }
  });

  router.get('/usage', async (ctx) => {
    const filter = filterFrom(ctx.query);
    const groupBy = groupByFrom(ctx.query);
    const interval = intervalFrom(ctx.query);
    const queries = [
      { ...filter, groupBy, interval },
      { ...filter, groupBy: [] },
    ];
    const [rows, [total], retention] = await Promise.all([
      store.queryUsage(queries[0]),
      store.queryUsage(queries[1]),
      retentionJson(store, queries),
    ]);
    ctx.body = {
      from: new Date(filter.from).toISOString(),
      to: new Date(filter.to).toISOString(),
      group_by: groupBy,
      interval: interval ?? null,
      filters: filter.filters,
      rows: rows.map(groupRowJson),
      total: total ? totalsJson(total) : null,
      ...retention,
    };
  });

  router.get('/requests', async (ctx) => {
    const page = await store.listRequests({
      ...filterFrom(ctx.query),
      limit: limitFrom(ctx.query),
      cursor: cursorFrom(ctx.query),
    });
    ctx.body = { data: page.records.map(recordJson), next_cursor: page.nextCursor };
  });

  router.get('/keys', async (ctx) => {
    const workspace = queryValue(ctx.query, 'workspace');
    const stored = (await store.listKeys(workspace)).map((k) => ({ ...keyJson(k), source: 'store' as const }));
    // Keys declared in gateway.config.yaml carry traffic too (their id is the records' key_id): listed read-only,
    // without the key or its hash, and without dates (they live in the file, not in the store).
    const declared = workspaces
      .filter((w) => workspace === undefined || w.id === workspace)
      .flatMap((w) =>
        w.keys
          .filter((k) => k.key || k.sha256)
          .map((k) => ({
            id: k.id,
            workspace: w.id,
            label: k.label ?? '',
            created_at: null,
            last_used_at: null,
            revoked: false,
            revoked_at: null,
            source: 'config' as const,
          })),
      );
    ctx.body = { data: [...stored, ...declared] };
  });

  router.post('/keys', async (ctx) => {
    const body = ctx.request.length ? parseJsonBody(await readBody(ctx.req, 64 * 1024)) : {};
    const { key, record } = await createGatewayKey(store, workspaces, {
      workspace: body.workspace as string | undefined,
      label: body.label as string | undefined,
    });
    await onKeysChanged();
    ctx.status = 201;
    ctx.body = { ...keyJson(record), source: 'store', key };
  });

  router.delete('/keys/:id', async (ctx) => {
    const revoked = await store.revokeKey(ctx.params.id);
    if (!revoked) throw new GatewayError('route_not_found', `No active key with id ${ctx.params.id.slice(0, 100)}`);
    await onKeysChanged();
    ctx.body = { id: ctx.params.id, revoked: true };
  });

  router.get('/budgets', async (ctx) => {
    ctx.body = {
      data: (await budgets.list()).map((b) => ({
        workspace: b.workspace,
        scope: b.scope,
        period: b.period,
        period_start: new Date(b.periodStart).toISOString(),
        period_end: new Date(b.periodEnd).toISOString(),
        limit_usd: formatUsd(b.limitPico),
        spent_usd: formatUsd(b.spentPico),
        reserved_usd: formatUsd(b.reservedPico),
        used_share: Number((b.spentPico * 10_000n) / (b.limitPico === 0n ? 1n : b.limitPico)) / 10_000,
        alert_at: b.alertAt,
        alerted: b.alerted,
      })),
    };
  });

  registerDashboardRoutes(router, { store, workspaces, proxyUrl });
  app.use(router.routes());
  if (metrics && !metrics.open) app.use(metricsRoutes(metrics, logger).routes());
  return app;
}

function adminBlocked(leftMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(leftMs / 1000));
  return new GatewayError(
    'auth_blocked',
    `Too many wrong admin tokens from this address: blocked for ${seconds} more seconds.`,
    {
      headers: { 'retry-after': String(seconds) },
    },
  );
}
