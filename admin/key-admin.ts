import { randomBytes } from 'node:crypto';
import type { WorkspaceEntry } from '../config/schema';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { GatewayKey, UsageStore } from '../storage/store';
import { generateGatewayKey, hashGatewayKey } from '../services/keys/key-ring';

/** Key management shared by the admin API and the CLI. The plain key is returned once and never stored. */
export async function createGatewayKey(
  store: UsageStore,
  workspaces: readonly WorkspaceEntry[],
  input: { workspace?: string; label?: string },
): Promise<{ key: string; record: GatewayKey }> {
  const workspace = input.workspace ?? workspaces[0]?.id ?? 'default';
  if (!workspaces.some((w) => w.id === workspace)) {
    throw new GatewayError(
      'invalid_body',
      `Unknown workspace "${truncate(String(workspace), 64)}"; workspaces are declared in gateway.config.yaml (${workspaces.map((w) => w.id).join(', ')}).`,
      { param: 'workspace' },
    );
  }
  if (input.label !== undefined && (typeof input.label !== 'string' || input.label.length > 200)) {
    throw new GatewayError('invalid_body', 'label must be a string of at most 200 characters', { param: 'label' });
  }
  const key = generateGatewayKey();
  const record = await store.insertKey({
    id: `key_${randomBytes(6).toString('hex')}`,
    workspaceId: workspace,
    label: input.label ?? '',
    hash: hashGatewayKey(key),
  });
  return { key, record };
}

/** A key as listed: everything but the hash. */
export function keyJson(k: GatewayKey) {
  return {
    id: k.id,
    workspace: k.workspaceId,
    label: k.label,
    created_at: new Date(k.createdAt).toISOString(),
    last_used_at: k.lastUsedAt === null ? null : new Date(k.lastUsedAt).toISOString(),
    revoked: k.revokedAt !== null,
    revoked_at: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
  };
}
