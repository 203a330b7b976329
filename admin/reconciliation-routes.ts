/**
 * GET /api/reconciliation: the stored reconciliation runs (reconcile/), newest first, and the lines of the newest
 * successful run's report (or of the run asked for), each a page at a time. Built on the reader thread.
 */
import type Router from '@koa/router';
import type { ParsedUrlQuery } from 'node:querystring';
import { GatewayError } from '../core/errors';
import { decodePageCursor, isPositiveId } from './page-cursor';
import { limitFrom, offsetFrom, queryValue } from './query-params';
import type { AdminReads } from './reads/admin-reads';
import type { ReconciliationPageQuery } from './reads/reconciliation-page';

function runFrom(q: ParsedUrlQuery): number | null {
  const raw = queryValue(q, 'run');
  if (raw === undefined || raw === '') return null;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !isPositiveId(n))
    throw new GatewayError('invalid_body', 'run must be a run id', { param: 'run' });
  return n;
}

function reconciliationQueryFrom(q: ParsedUrlQuery): ReconciliationPageQuery {
  const cursor = queryValue(q, 'cursor');
  return {
    provider: queryValue(q, 'provider') || null,
    limit: limitFrom(q),
    before: cursor ? decodePageCursor(cursor, isPositiveId) : null,
    run: runFrom(q),
    linesLimit: limitFrom(q, 'lines_limit'),
    linesOffset: offsetFrom(q, 'lines_offset'),
  };
}

export function registerReconciliationRoutes(router: Router, reads: AdminReads): void {
  router.get('/reconciliation', async (ctx) => {
    const query = reconciliationQueryFrom(ctx.query);
    ctx.type = 'application/json';
    ctx.body = await reads.reconciliation(query);
  });
}
