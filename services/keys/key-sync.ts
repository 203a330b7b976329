import type { Logger } from 'pino';
import type { LimitStoreConfig } from '../../config/limits';
import type { WorkspaceEntry } from '../../config/schema';
import type { GatewayKey, UsageStore } from '../../storage/store';
import type { KeyRing, SyncedKey } from './key-ring';
import { NO_SHARED_KEYS, SharedKeys, type SharedKeyState } from './shared-keys';

export interface KeySyncOptions {
  /** With a redis_url, keys are also shared through Redis (created and revoked keys reach every instance). */
  limitStore?: LimitStoreConfig;
  intervalMs?: number;
  touchEveryMs?: number;
}

/**
 * Keeps the key ring in step with the keys table, and with Redis when limit_store.redis_url is set, so that a
 * key created or revoked on any instance (admin API or CLI) takes effect everywhere within one sync interval
 * (default 500 ms; at once through Redis pub/sub), and writes last-used times in batches. Keys from YAML are
 * not synced and are left alone.
 *
 * Each run reads the keys table, publishes what changed in it to Redis (so instances with their own usage
 * stores learn of it), reads Redis back, and gives the ring every key that is live in either and revoked in
 * neither. The ring's synced keys are replaced as a whole, so a key revoked before the first run (right after
 * start) is dropped too.
 */
export class KeySync {
  private readonly shared: SharedKeys | undefined;
  private readonly intervalMs: number;
  private readonly touchEveryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private lastTouch = 0;
  private running: Promise<void> | undefined;
  /** The run that follows the one under way, once someone asked for it. */
  private next: Promise<void> | undefined;
  private lastWarning = 0;
  /** The keys table as last read, its ids (for last-used updates) and what of it was last published. */
  private stored: GatewayKey[] = [];
  private storedIds = new Set<string>();
  private published = '';
  private sharedState: SharedKeyState = NO_SHARED_KEYS;
  /** The ids given to the ring last time, to replace its keys only when they change. */
  private applied: string | undefined;
  /** Until the keys table is read once, the ring keeps the keys the bootstrap read from it. */
  private loaded = false;

  constructor(
    private readonly ring: KeyRing,
    private readonly store: UsageStore,
    private readonly workspaces: readonly WorkspaceEntry[],
    private readonly log: Logger,
    options: KeySyncOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 500;
    this.touchEveryMs = options.touchEveryMs ?? 5000;
    const redis = options.limitStore;
    if (redis?.redis_url)
      this.shared = new SharedKeys(redis.redis_url, redis.key_prefix, (err) =>
        this.warn(err, 'gateway key sync: Redis connection error'),
      );
  }

  start(): void {
    this.timer = setInterval(() => void this.refresh(), this.intervalMs).unref();
    this.shared?.subscribe(() => void this.refresh());
    void this.refresh();
  }

  /**
   * One sync now (also called right after a key is created or revoked through this instance); resolves once a sync
   * that began after the call has applied. A run already under way may have read its sources before the change
   * the caller just made, so the caller waits for the next run (shared by every caller meanwhile): the admin API
   * answers a key's creation only once the key works on this instance.
   */
  refresh(): Promise<void> {
    if (this.running) {
      this.next ??= this.running
        .catch(() => undefined)
        .then(() => {
          this.next = undefined;
          return this.refresh();
        });
      return this.next;
    }
    this.running = this.sync().finally(() => (this.running = undefined));
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.touch(true);
    await this.shared?.close();
  }

  private async sync(): Promise<void> {
    try {
      this.stored = await this.store.listKeys();
      this.storedIds = new Set(this.stored.map((k) => k.id));
      this.loaded = true;
    } catch (err) {
      this.warn(err, 'gateway key sync failed; keeping the last known keys');
    }
    if (this.shared) {
      try {
        const snapshot = this.stored.map((k) => `${k.id}:${k.revokedAt === null ? 1 : 0}`).join(',');
        if (this.loaded && snapshot !== this.published) {
          await this.shared.publish(
            this.stored.map((k) => ({
              id: k.id,
              hash: k.hash,
              workspaceId: k.workspaceId,
              revoked: k.revokedAt !== null,
            })),
          );
          this.published = snapshot;
        }
        this.sharedState = await this.shared.read(this.sharedState);
      } catch (err) {
        this.warn(err, 'gateway key sync through Redis failed; keeping the last known keys');
      }
    }
    if (this.loaded) this.apply();
    await this.touch(false).catch((err) => this.warn(err, 'gateway key last-used update failed'));
  }

  /** Every key live in the table or in Redis and revoked in neither, for a configured workspace. */
  private apply(): void {
    const live = new Map<string, { hash: string; workspaceId: string }>();
    for (const k of this.stored) if (k.revokedAt === null) live.set(k.id, k);
    for (const [id, k] of this.sharedState.active) live.set(id, k);
    for (const k of this.stored) if (k.revokedAt !== null) live.delete(k.id);
    for (const id of this.sharedState.revoked) live.delete(id);
    const keys: SyncedKey[] = [];
    for (const [keyId, k] of live) {
      const ws = this.workspaces.find((w) => w.id === k.workspaceId);
      if (ws) keys.push({ hash: k.hash, keyId, workspace: { id: ws.id, name: ws.name ?? ws.id } });
    }
    const ids = keys
      .map((k) => k.keyId)
      .sort()
      .join(',');
    if (ids === this.applied) return;
    this.ring.replaceSynced(keys);
    this.applied = ids;
  }

  private async touch(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastTouch < this.touchEveryMs) return;
    this.lastTouch = now;
    const ids = this.ring.takeUsed().filter((id) => this.storedIds.has(id));
    if (ids.length) await this.store.touchKeys(ids, now);
  }

  /** Logged at most every 10 s: a store or Redis outage would otherwise log twice a second. */
  private warn(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.log.warn({ err }, message);
  }
}
