import type Router from '@koa/router';
import type { WorkspaceEntry } from '../config/schema';
import { parseJsonBody, readBody } from '../intake/body';
import { GatewayError } from '../core/errors';
import type { UsageStore } from '../storage/store';
import { bulkKeyInputs, createGatewayKey, createGatewayKeys, keyJson } from './key-admin';
import { keyListPage } from './key-list';
import { queryValue, limitFrom } from './query-params';
import type { AdminReads } from './reads/admin-reads';

/** POST /api/keys/bulk: room for BULK_KEYS_MAX keys with the longest labels. */
const BULK_BODY_MAX = 512 * 1024;

export interface KeyRouteDeps {
  /** Writes (keys created or revoked). */
  store: UsageStore;
  reads: AdminReads;
  workspaces: readonly WorkspaceEntry[];
  /** Called after a key was created or revoked here, so this instance applies it at once. */
  onKeysChanged: () => Promise<void>;
}

/** GET /api/keys (page by page), POST /api/keys, POST /api/keys/bulk and DELETE /api/keys/:id. */
export function registerKeyRoutes(router: Router, { store, reads, workspaces, onKeysChanged }: KeyRouteDeps): void {
  router.get('/keys', async (ctx) => {
    const query = {
      workspace: queryValue(ctx.query, 'workspace'),
      limit: limitFrom(ctx.query),
      cursor: queryValue(ctx.query, 'cursor') || null,
    };
    ctx.body = await keyListPage(reads, workspaces, query);
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

  router.post('/keys/bulk', async (ctx) => {
    const inputs = bulkKeyInputs(parseJsonBody(await readBody(ctx.req, BULK_BODY_MAX)));
    const created = await createGatewayKeys(store, workspaces, inputs, (i, name) => `keys[${i}].${name}`);
    await onKeysChanged();
    ctx.status = 201;
    ctx.body = { data: created.map(({ key, record }) => ({ ...keyJson(record), source: 'store', key })) };
  });

  router.delete('/keys/:id', async (ctx) => {
    const revoked = await store.revokeKey(ctx.params.id);
    if (!revoked) throw new GatewayError('route_not_found', `No active key with id ${ctx.params.id.slice(0, 100)}`);
    await onKeysChanged();
    ctx.body = { id: ctx.params.id, revoked: true };
  });
}
