/**
 * `tollgate keys import <file>` and `keys create --count`: many keys in one store transaction. An imported key is
 * hashed here; only its sha256 is stored, as for a key the gateway generated.
 */
import { randomBytes } from 'node:crypto';
import type { WorkspaceEntry } from '../config/schema';
import { hashGatewayKey } from '../services/keys/key-ring';
import type { NewGatewayKey } from '../storage/store';
import { UserError } from './errors';

/** Keys one `keys create --count` or `keys import` stores at most. */
export const CLI_KEYS_MAX = 100_000;

export function positiveCount(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > CLI_KEYS_MAX)
    throw new UserError(`--count must be a whole number from 1 to ${CLI_KEYS_MAX}`);
  return n;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The keys of an import file: JSON lines, or one JSON array, of {key | sha256, workspace?, label?, id?}. */
export function importedKeys(text: string, workspaces: readonly WorkspaceEntry[]): NewGatewayKey[] {
  const entries = parseEntries(text);
  if (entries.length === 0) throw new UserError('the file holds no keys');
  if (entries.length > CLI_KEYS_MAX) throw new UserError(`at most ${CLI_KEYS_MAX} keys at a time`);
  return entries.map((e, i) => {
    const where = `entry ${i + 1}`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) throw new UserError(`${where}: not a JSON object`);
    const { key, sha256, workspace = workspaces[0]?.id ?? 'default', label = '', id } = e as Record<string, unknown>;
    if (!workspaces.some((w) => w.id === workspace))
      throw new UserError(`${where}: unknown workspace ${JSON.stringify(workspace)}`);
    if (typeof label !== 'string' || label.length > 200)
      throw new UserError(`${where}: label must be a string of at most 200 characters`);
    if (id !== undefined && (typeof id !== 'string' || id.length === 0 || id.length > 100))
      throw new UserError(`${where}: id must be a string of 1 to 100 characters`);
    let hash: string;
    if (typeof key === 'string' && key.length >= 24) hash = hashGatewayKey(key);
    else if (typeof sha256 === 'string' && SHA256_HEX.test(sha256.toLowerCase())) hash = sha256.toLowerCase();
    else throw new UserError(`${where}: needs "key" (at least 24 characters) or "sha256" (64 hex digits)`);
    return {
      id: (id as string | undefined) ?? `key_${randomBytes(6).toString('hex')}`,
      workspaceId: workspace as string,
      label,
      hash,
    };
  });
}

function parseEntries(text: string): unknown[] {
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith('[')) return JSON.parse(trimmed) as unknown[];
    return trimmed
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as unknown);
  } catch (err) {
    throw new UserError(`not JSON lines nor a JSON array: ${(err as Error).message}`);
  }
}
