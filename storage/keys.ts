/**
 * Gateway-key rows shared by both stores. Only sha256 hex digests are accepted so that a raw
 * key can never be stored by mistake.
 */
import { toNumber, toNumberOrNull } from './codec';
import type { GatewayKey, NewGatewayKey } from './store';

const SHA256_HEX = /^[0-9a-f]{64}$/;

export const KEY_COLUMNS = 'id, workspace_id, label, hash, created_at, last_used_at, revoked_at';

export function checkNewKey(k: NewGatewayKey, now = Date.now()): GatewayKey {
  if (!k.id) throw new Error('key id is required');
  if (!k.workspaceId) throw new Error('key workspaceId is required');
  if (!SHA256_HEX.test(k.hash))
    throw new Error('key hash must be a lower-case sha256 hex digest (never the key itself)');
  return {
    id: k.id,
    workspaceId: k.workspaceId,
    label: k.label ?? '',
    hash: k.hash,
    createdAt: k.createdAt ?? now,
    lastUsedAt: null,
    revokedAt: null,
  };
}

export function keyValues(k: GatewayKey): (string | number | null)[] {
  return [k.id, k.workspaceId, k.label, k.hash, k.createdAt, k.lastUsedAt, k.revokedAt];
}

export function keyFromRow(row: Record<string, unknown>): GatewayKey {
  return {
    id: String(row.id),
    workspaceId: String(row.workspace_id),
    label: String(row.label),
    hash: String(row.hash),
    createdAt: toNumber(row.created_at),
    lastUsedAt: toNumberOrNull(row.last_used_at),
    revokedAt: toNumberOrNull(row.revoked_at),
  };
}

/** A key row with its change sequence (keys.updated_seq): what the key sync reads. */
export interface KeyChange extends GatewayKey {
  seq: number;
}

/**
 * The next change sequence, for a row being created or revoked. Writers of the keys table are serialized (SQLite
 * has one writer; PostgreSQL takes KEY_WRITE_LOCK first), so numbers are given, and committed, in order: a reader
 * that has seen number n never misses a later change numbered below it.
 */
export const NEXT_KEY_SEQ = '(SELECT COALESCE(MAX(updated_seq), 0) + 1 FROM keys)';

export const KEY_CHANGES_SQL = (param: (n: number) => string) =>
  `SELECT ${KEY_COLUMNS}, updated_seq FROM keys WHERE updated_seq > ${param(1)} ORDER BY updated_seq LIMIT ${param(2)}`;

export function keyChangeFromRow(row: Record<string, unknown>): KeyChange {
  return { ...keyFromRow(row), seq: toNumber(row.updated_seq) };
}
