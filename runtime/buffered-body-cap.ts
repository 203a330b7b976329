import type { BodyMemoryBudget, BodyOwner, BufferedBound } from '../core/body-memory';

export interface BufferedBodyShares {
  /** server.max_buffered_bytes: all requests in flight together. */
  maxBytes: number;
  /** server.workspace_buffered_bytes: one workspace's requests. */
  workspaceBytes: number;
  /** server.key_buffered_bytes: one key's requests; undefined: only the workspace's share. */
  keyBytes?: number;
}

/**
 * server.max_buffered_bytes: request-body bytes held in memory across the requests in flight. Without a bound,
 * enough concurrent bodies just under the body limit hold more memory than a small machine has; with it, a body
 * that does not fit is refused (503 gateway_busy) before it is read. A JSON body counts twice, its bytes and its
 * parsed form (JSON_BODY_COPIES); uploads received into the spool or streamed through hold a few chunks each and
 * are not counted.
 *
 * Within the bound each workspace (and, when set, each key) may hold only its share, so that one tenant's slow
 * uploads cannot take the whole bound and have every other tenant's bodies refused. A request without a workspace
 * (no auth plugin) counts against the bound only. Per request: a few additions and two map reads.
 */
export class BufferedBodyCap implements BodyMemoryBudget {
  /** Bytes reserved by the requests in flight (the tollgate_buffered_request_bytes gauge). */
  held = 0;
  /** Bytes reserved per workspace, and per workspace and key; an owner holding nothing has no entry. */
  private readonly byWorkspace = new Map<string, number>();
  private readonly byKey = new Map<string, number>();

  constructor(private readonly shares: BufferedBodyShares) {}

  get maxBytes(): number {
    return this.shares.maxBytes;
  }

  /** Bytes reserved by one workspace's requests in flight (for tests and diagnostics). */
  heldBy(workspace: string): number {
    return this.byWorkspace.get(workspace) ?? 0;
  }

  reserve(bytes: number, owner: BodyOwner): BufferedBound | undefined {
    const { maxBytes, workspaceBytes, keyBytes } = this.shares;
    if (this.held + bytes > maxBytes) return 'max_buffered_bytes';
    const workspace = owner.workspace;
    if (workspace !== undefined) {
      if ((this.byWorkspace.get(workspace) ?? 0) + bytes > workspaceBytes) return 'workspace_buffered_bytes';
      if (keyBytes !== undefined && owner.key !== undefined) {
        const key = keyOf(workspace, owner.key);
        if ((this.byKey.get(key) ?? 0) + bytes > keyBytes) return 'key_buffered_bytes';
        add(this.byKey, key, bytes);
      }
      add(this.byWorkspace, workspace, bytes);
    }
    this.held += bytes;
    return undefined;
  }

  release(bytes: number, owner: BodyOwner): void {
    this.held -= bytes;
    const workspace = owner.workspace;
    if (workspace === undefined) return;
    add(this.byWorkspace, workspace, -bytes);
    if (this.shares.keyBytes !== undefined && owner.key !== undefined)
      add(this.byKey, keyOf(workspace, owner.key), -bytes);
  }
}

/** Key ids are unique within their workspace. */
const keyOf = (workspace: string, key: string) => `${workspace}\0${key}`;

function add(counts: Map<string, number>, name: string, bytes: number): void {
  const next = (counts.get(name) ?? 0) + bytes;
  if (next > 0) counts.set(name, next);
  else counts.delete(name);
}
