/**
 * GET /api/keys page by page: the keys in the store (created through the API or the CLI), oldest first, then the keys
 * declared in gateway.config.yaml, read-only. The cursor says which of the two lists the next page continues, and
 * where.
 */
import type { WorkspaceEntry } from '../config/schema';
import { keyJson } from './key-admin';
import { decodePageCursor, encodePageCursor } from './page-cursor';
import type { AdminReads } from './reads/admin-reads';

type KeyCursor = { store: [createdAt: number, id: string] } | { config: number };

const isKeyCursor = (v: unknown): v is KeyCursor => {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  if ('config' in c) return Number.isSafeInteger(c.config) && (c.config as number) >= 0;
  return (
    Array.isArray(c.store) && c.store.length === 2 && Number.isSafeInteger(c.store[0]) && typeof c.store[1] === 'string'
  );
};

/**
 * Keys declared in gateway.config.yaml carry traffic too (their id is the records' key_id): listed read-only, without
 * the key or its hash, and without dates (they live in the file, not in the store). GET /api/keys and `keys list`.
 */
export function declaredKeys(workspaces: readonly WorkspaceEntry[], workspace?: string) {
  return workspaces
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
}

export async function keyListPage(
  reads: AdminReads,
  workspaces: readonly WorkspaceEntry[],
  q: { workspace?: string; limit: number; cursor: string | null },
) {
  const at = q.cursor === null ? undefined : decodePageCursor(q.cursor, isKeyCursor);
  const declared = declaredKeys(workspaces, q.workspace);
  const configPage = (from: number, room: number) => ({
    data: declared.slice(from, from + room),
    next: from + room < declared.length ? { config: from + room } : null,
  });

  if (at && 'config' in at) {
    const { data, next } = configPage(at.config, q.limit);
    return { data, next_cursor: next && encodePageCursor(next) };
  }
  const after = at && { createdAt: at.store[0], id: at.store[1] };
  const page = await reads.keys({ workspace: q.workspace, limit: q.limit, after });
  const stored = page.keys.map((k) => ({ ...keyJson(k), source: 'store' as const }));
  const last = page.keys[page.keys.length - 1];
  if (page.more) return { data: stored, next_cursor: encodePageCursor({ store: [last.createdAt, last.id] }) };
  // The store's last keys: the page goes on with the declared keys (the next page starts with them when it is full).
  const rest = configPage(0, q.limit - stored.length);
  return { data: [...stored, ...rest.data], next_cursor: rest.next && encodePageCursor(rest.next) };
}
