/**
 * The spend freezes in force, held in memory so that the request path checks them without a store read: every
 * instance reads the active freezes from the usage store every budgets.runtime_refresh_ms in the background (as
 * runtime budgets are read), and the instance that made or lifted one refreshes at once. An expiry is checked on
 * the request path against the clock, so a freeze ends at its time even between two reads.
 */
import type { Logger } from 'pino';
import type { SpendFreezeRow, SpendFreezeTable } from '../storage/spend-freeze-table';

/** The scope names a freeze may hold, as budgets name theirs. */
export const WORKSPACE_SCOPE = 'workspace';
export const keyScope = (keyId: string) => `key_id=${keyId}`;
export const tagScope = (tag: string, value: string) => `${tag}=${value}`;

export class SpendFreezes {
  /** Per workspace, its frozen scopes. */
  private byWorkspace = new Map<string, Map<string, SpendFreezeRow>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastWarning = 0;

  constructor(
    readonly table: SpendFreezeTable,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {}

  start(): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), this.intervalMs).unref();
    return this.refresh();
  }

  /** Freezes read at the last refresh and not expired at `now`. */
  activeCount(now: number): number {
    let n = 0;
    for (const scopes of this.byWorkspace.values())
      for (const f of scopes.values()) if (f.expiresAt === null || f.expiresAt > now) n++;
    return n;
  }

  /**
   * On the request path: the freeze that refuses this request, if any (no I/O). A workspace without a freeze
   * costs one map read: the clock is read only when it has one.
   */
  frozen(
    workspace: string,
    keyId: string | undefined,
    tags: Readonly<Record<string, string>>,
  ): SpendFreezeRow | undefined {
    const scopes = this.byWorkspace.get(workspace);
    if (scopes === undefined) return undefined;
    const now = Date.now();
    const live = (f: SpendFreezeRow | undefined) => (f && (f.expiresAt === null || f.expiresAt > now) ? f : undefined);
    let hit =
      live(scopes.get(WORKSPACE_SCOPE)) ?? (keyId === undefined ? undefined : live(scopes.get(keyScope(keyId))));
    for (const tag in tags) hit ??= live(scopes.get(tagScope(tag, tags[tag])));
    return hit;
  }

  /** Stores a freeze (once per id, whichever instance comes first) and applies it here at once. */
  async freeze(row: SpendFreezeRow): Promise<boolean> {
    const added = await this.table.insert(row);
    await this.refresh();
    return added;
  }

  /** Lifts a freeze in the store and here at once; undefined when no freeze has this id. */
  async lift(id: string, now: number): Promise<SpendFreezeRow | undefined> {
    const row = await this.table.lift(id, now);
    if (row) await this.refresh();
    return row;
  }

  /** Reads the active freezes; a read already under way is waited for, then read again. */
  refresh(): Promise<void> {
    const previous = this.running;
    const run = (async () => {
      await previous?.catch(() => undefined);
      await this.read();
    })();
    this.running = run;
    return run;
  }

  private async read(): Promise<void> {
    let rows: SpendFreezeRow[];
    try {
      rows = await this.table.active(Date.now());
    } catch (err) {
      // The freezes last read stay in force until the store answers again.
      if (Date.now() - this.lastWarning > 10_000) {
        this.lastWarning = Date.now();
        this.log.warn({ err }, 'spend freezes: the usage store could not be read; keeping the freezes last read');
      }
      return;
    }
    const next = new Map<string, Map<string, SpendFreezeRow>>();
    for (const row of rows) {
      const scopes = next.get(row.workspace) ?? new Map<string, SpendFreezeRow>();
      next.set(row.workspace, scopes);
      scopes.set(row.scope, row);
    }
    this.byWorkspace = next;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
