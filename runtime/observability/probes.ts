import Router from '@koa/router';
import type { Readiness } from './readiness';

/**
 * GET (and HEAD) /healthz and /readyz, without a key, on the proxy port and the admin port: the documented exception
 * to "only the spec's /v1 paths" on the proxy port. /healthz answers 200 while the process serves HTTP at all
 * (liveness); /readyz 200 (ready, or degraded: a dependency is down that readiness does not fail on) or 503 with the
 * result of each check (./readiness.ts). Neither is proxied, recorded,
 * counted in the metrics or logged per request (orchestrators probe every few seconds), and neither tells anything
 * of the deployment: no URL, path, address or version, only the names of the checks and whether they passed.
 */
export function probeRoutes(readiness: Readiness): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.set('cache-control', 'no-store');
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const { ready, checks, failed, degraded } = await readiness.report();
    ctx.set('cache-control', 'no-store');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: !ready ? 'not_ready' : degraded.length > 0 ? 'degraded' : 'ready', checks, failed, degraded };
  });
  return router;
}
