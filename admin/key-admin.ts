import { randomBytes } from 'node:crypto';
import type { WorkspaceEntry } from '../config/schema';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { GatewayKey, UsageStore } from '../storage/store';
import { generateGatewayKey, hashGatewayKey } from '../services/keys/key-ring';

/** Keys one bulk creation (POST /api/keys/bulk, `tollgate keys create --count`) may create. */
export const BULK_KEYS_MAX = 1000;

export interface NewKeyInput {
  workspace?: string;
  label?: string;
}

/** Key management shared by the admin API and the CLI. The plain key is returned once and never stored. */
export async function createGatewayKey(
  store: UsageStore,
  workspaces: readonly WorkspaceEntry[],
  input: NewKeyInput,
): Promise<{ key: string; record: GatewayKey }> {
  return (await createGatewayKeys(store, workspaces, [input]))[0];
}

/** Creates every key in one transaction: all of them, or none when one input is refused. */
export async function createGatewayKeys(
  store: UsageStore,
  workspaces: readonly WorkspaceEntry[],
  inputs: readonly NewKeyInput[],
  param = (_i: number, name: string) => name,
): Promise<{ key: string; record: GatewayKey }[]> {
  const created = inputs.map((input, i) => {
    const workspace = checkedWorkspace(workspaces, input.workspace, param(i, 'workspace'));
    if (input.label !== undefined && (typeof input.label !== 'string' || input.label.length > 200)) {
      throw new GatewayError('invalid_body', 'label must be a string of at most 200 characters', {
        param: param(i, 'label'),
      });
    }
    const key = generateGatewayKey();
    const row = {
      id: `key_${randomBytes(6).toString('hex')}`,
      workspaceId: workspace,
      label: input.label ?? '',
      hash: hashGatewayKey(key),
    };
    return { key, row };
  });
  const records = await store.insertKeys(created.map((c) => c.row));
  return created.map((c, i) => ({ key: c.key, record: records[i] }));
}

function checkedWorkspace(workspaces: readonly WorkspaceEntry[], asked: unknown, param: string): string {
  const workspace = asked ?? workspaces[0]?.id ?? 'default';
  if (typeof workspace !== 'string' || !workspaces.some((w) => w.id === workspace)) {
    throw new GatewayError(
      'invalid_body',
      `Unknown workspace "${truncate(String(workspace), 64)}"; workspaces are declared in gateway.config.yaml (${workspaces.map((w) => w.id).join(', ')}).`,
      { param },
    );
  }
  return workspace;
}

/** The inputs of POST /api/keys/bulk: {"keys": [{workspace?, label?}, ...]}, 1 to BULK_KEYS_MAX of them. */
export function bulkKeyInputs(body: Record<string, unknown>): NewKeyInput[] {
  const keys = body.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > BULK_KEYS_MAX) {
    throw new GatewayError('invalid_body', `keys must be an array of 1 to ${BULK_KEYS_MAX} objects`, {
      param: 'keys',
    });
  }
  return keys.map((k: unknown, i) => {
    if (k === null || typeof k !== 'object' || Array.isArray(k))
      throw new GatewayError('invalid_body', `keys[${i}] must be an object`, { param: `keys[${i}]` });
    const { workspace, label } = k as Record<string, unknown>;
    return { workspace, label } as NewKeyInput;
  });
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
