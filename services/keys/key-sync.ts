import type { Logger } from 'pino';
import type { LimitStoreConfig } from '../../config/limits';
import type { WorkspaceEntry } from '../../config/schema';
import type { UsageStore } from '../../storage/store';
import type { KeyRing } from './key-ring';
import { SharedKeys, type SharedKey } from './shared-keys';

export interface KeySyncOptions {
  /** With a redis_url, keys are also shared through Redis (created and revoked keys reach every instance). */
  limitStore?: LimitStoreConfig;
  intervalMs?: number;
  touchEveryMs?: number;
}

/** What one source (the keys table or Redis) last said about a key. */
interface KeyView {
  hash: string;
  workspaceId: string;
  revoked: boolean;
}

/** Key changes read from the keys table at a time; between two reads the event loop serves requests. */
const STORE_BATCH = 5000;

/**
 * Keeps the key ring in step with the keys table, and with Redis when limit_store.redis_url is set, so that a
 * key created or revoked on any instance (admin API or CLI) takes effect everywhere within one sync interval
 * (default 500 ms; at once through Redis pub/sub), and writes last-used times in batches. Keys from YAML are
 * not synced and are left alone.
 *
 * Each run reads only what changed: the rows of the keys table whose change sequence (keys.updated_seq) is past
 * the last one it saw, and the Redis entries past Redis's own sequence. It publishes the table's changes to Redis
 * (so instances with their own usage stores learn of them) and gives the ring each changed key: valid when live
 * in either source and revoked in neither. An idle run is two indexed reads, whatever the number of keys; the
 * first run reads the whole table, so a key revoked right after start is dropped by it.
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
  /** What the keys table and Redis say about each key, and the last change sequence read from each. */
  private readonly stored = new Map<string, KeyView>();
  private readonly mirrored = new Map<string, KeyView>();
  private storedSeq = 0;
  private mirroredSeq = 0;
  /** Table changes not yet published to Redis. */
  private unpublished = new Map<string, SharedKey>();
  private readonly workspaceById: ReadonlyMap<string, { id: string; name: string }>;

  constructor(
    private readonly ring: KeyRing,
    private readonly store: UsageStore,
    workspaces: readonly WorkspaceEntry[],
    private readonly log: Logger,
    options: KeySyncOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 500;
    this.touchEveryMs = options.touchEveryMs ?? 5000;
    this.workspaceById = new Map(workspaces.map((w) => [w.id, { id: w.id, name: w.name ?? w.id }]));
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
      await this.readStore();
    } catch (err) {
      this.warn(err, 'gateway key sync failed; keeping the last known keys');
    }
    if (this.shared) {
      try {
        await this.readMirror(this.shared);
        const changes = [...this.unpublished.values()];
        await this.shared.publish(changes);
        for (const k of changes) if (this.unpublished.get(k.id) === k) this.unpublished.delete(k.id);
      } catch (err) {
        this.warn(err, 'gateway key sync through Redis failed; keeping the last known keys');
      }
    }
    await this.touch(false).catch((err) => this.warn(err, 'gateway key last-used update failed'));
  }

  private async readStore(): Promise<void> {
    for (;;) {
      const changes = await this.store.keyChangesSince(this.storedSeq, STORE_BATCH);
      for (const k of changes) {
        const view = { hash: k.hash, workspaceId: k.workspaceId, revoked: k.revokedAt !== null };
        this.stored.set(k.id, view);
        this.storedSeq = k.seq;
        if (this.shared) this.unpublished.set(k.id, { id: k.id, ...view });
        this.apply(k.id);
      }
      if (changes.length < STORE_BATCH) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private async readMirror(shared: SharedKeys): Promise<void> {
    for (;;) {
      const { seq, upTo, keys } = await shared.changesSince(this.mirroredSeq);
      if (seq < this.mirroredSeq) {
        // Redis lost its data: read it from the start, and publish the whole table to it again.
        this.mirroredSeq = 0;
        for (const [id, view] of this.stored) this.unpublished.set(id, { id, ...view });
        continue;
      }
      for (const k of keys) {
        this.mirrored.set(k.id, k);
        this.apply(k.id);
      }
      const progressed = upTo > this.mirroredSeq;
      this.mirroredSeq = upTo;
      if (!progressed || upTo >= seq) return;
    }
  }

  /** Key `id` is valid when live in the table or in Redis and revoked in neither, for a configured workspace. */
  private apply(id: string): void {
    const stored = this.stored.get(id);
    const mirrored = this.mirrored.get(id);
    const live = stored?.revoked || mirrored?.revoked ? undefined : (stored ?? mirrored);
    const workspace = live && this.workspaceById.get(live.workspaceId);
    if (live && workspace) this.ring.setSynced({ hash: live.hash, keyId: id, workspace });
    else this.ring.dropSynced(id);
  }

  private async touch(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastTouch < this.touchEveryMs) return;
    this.lastTouch = now;
    const ids = this.ring.takeUsed().filter((id) => this.stored.has(id));
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
