import { z } from 'zod';
import { JSON_BODY_COPIES } from '../core/body-memory';

/**
 * A share of server.max_buffered_bytes: a size (32mb, 1048576) or a percentage of the bound (25%). Resolved to
 * bytes once the bound is known (resolveShare).
 */
export const shareOfBuffered = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(
      /^\d+(\.\d+)?\s*(%|b|kb|mb|gb)$/i,
      'expected a size such as 64mb, or a percentage of max_buffered_bytes such as 25%',
    ),
]);

export type ShareOfBuffered = z.infer<typeof shareOfBuffered>;

/** What one workspace may hold when server.workspace_buffered_bytes is not set: a quarter of the bound. */
export const DEFAULT_WORKSPACE_SHARE = '25%';

/** A share in bytes: a percentage of `bound`, or a size; undefined stays undefined (no share of its own). */
export function resolveShare(share: ShareOfBuffered | undefined, bound: number): number | undefined {
  if (share === undefined) return undefined;
  if (typeof share === 'number') return share;
  const m = /^(\d+(?:\.\d+)?)\s*(%|b|kb|mb|gb)$/i.exec(share.trim())!;
  const n = Number(m[1]);
  if (m[2] === '%') return Math.floor((bound * n) / 100);
  const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[m[2].toLowerCase() as 'b'];
  return Math.floor(n * mult);
}

interface ServerSizes {
  body_limit: number;
  max_buffered_bytes: number;
  workspace_buffered_bytes?: ShareOfBuffered;
  key_buffered_bytes?: ShareOfBuffered;
}

/**
 * The shares in bytes, checked: each at least twice body_limit (smaller, a JSON body near the limit could never be
 * taken from that workspace or key, and its client would retry forever) and at most the bound. The default
 * workspace share is a quarter of the bound, raised to twice body_limit when that is more.
 */
export function resolveShares(
  server: ServerSizes,
  issue: (path: string, message: string) => void,
): { workspace: number; key: number | undefined } {
  const least = JSON_BODY_COPIES * server.body_limit;
  const bound = server.max_buffered_bytes;
  const check = (path: string, bytes: number | undefined) => {
    if (bytes === undefined) return;
    if (bytes < least)
      issue(path, `must be at least twice server.body_limit (${least} bytes): a JSON body counts twice`);
    else if (bytes > bound) issue(path, `must be at most server.max_buffered_bytes (${bound} bytes)`);
  };
  const explicit = resolveShare(server.workspace_buffered_bytes, bound);
  check('workspace_buffered_bytes', explicit);
  const workspace = explicit ?? Math.min(bound, Math.max(least, resolveShare(DEFAULT_WORKSPACE_SHARE, bound)!));
  const key = resolveShare(server.key_buffered_bytes, bound);
  check('key_buffered_bytes', key);
  return { workspace, key };
}
