/**
 * GET /api/freezes (the spend freezes, the active ones or all, newest first) and DELETE /api/freezes/:id (lifts
 * one: this instance at once, the others sharing the store within budgets.runtime_refresh_ms).
 */
import type Router from '@koa/router';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { SpendFreezes } from '../services/spend-freezes';
import { freezeState, type SpendFreezeRow } from '../storage/spend-freeze-table';
import { limitFrom, queryValue } from './query-params';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A freeze as the admin API and `tollgate freezes list --json` show it. */
export function freezeJson(row: SpendFreezeRow, now: number) {
  return {
    id: row.id,
    workspace: row.workspace,
    scope: row.scope,
    reason: row.reason,
    state: freezeState(row, now),
    created_at: iso(row.createdAt)!,
    expires_at: iso(row.expiresAt),
    lifted_at: iso(row.liftedAt),
  };
}

export function registerFreezeRoutes(router: Router, freezes: SpendFreezes): void {
  router.get('/freezes', async (ctx) => {
    const limit = limitFrom(ctx.query);
    const state = queryValue(ctx.query, 'state') || 'active';
    if (state !== 'active' && state !== 'all')
      throw new GatewayError('invalid_body', 'state must be active or all', { param: 'state' });
    const now = Date.now();
    const rows = state === 'active' ? (await freezes.table.active(now)).reverse() : await freezes.table.list(limit);
    ctx.body = { data: rows.slice(0, limit).map((r) => freezeJson(r, now)) };
  });

  router.delete('/freezes/:id', async (ctx) => {
    const now = Date.now();
    const row = await freezes.lift(ctx.params.id, now);
    if (!row) throw new GatewayError('freeze_not_found', `No spend freeze with id ${truncate(ctx.params.id, 100)}`);
    ctx.body = freezeJson(row, now);
  });
}
