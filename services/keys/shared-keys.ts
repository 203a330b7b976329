import type { Redis } from 'ioredis';
import { createRedis } from '../redis-client';

/** A stored gateway key as shared through Redis: enough to verify it (its hash), never the key itself. */
export interface SharedKey {
  id: string;
  hash: string;
  workspaceId: string;
  revoked: boolean;
}

/** What Redis says about the keys, as of `version`. */
export interface SharedKeyState {
  version: string;
  /** Live keys by id. */
  active: ReadonlyMap<string, { hash: string; workspaceId: string }>;
  /** Revoked key ids; kept for good, a revoked key never comes back. */
  revoked: ReadonlySet<string>;
}

export const NO_SHARED_KEYS: SharedKeyState = { version: '', active: new Map(), revoked: new Set() };

/**
 * publish: KEYS = active hash, revoked set, version; ARGV = channel, then id, revoked (1|0), value per key.
 * A revoked id is revoked for good and removed from the active keys; a live one is added unless revoked
 * anywhere. When anything changed the version is bumped and announced on the channel. Returns the version.
 */
const PUBLISH = `
local changed = false
for i = 2, #ARGV, 3 do
  local id, revoked, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if revoked == '1' then
    if redis.call('SADD', KEYS[2], id) == 1 then changed = true end
    if redis.call('HDEL', KEYS[1], id) == 1 then changed = true end
  elseif redis.call('SISMEMBER', KEYS[2], id) == 0 and redis.call('HGET', KEYS[1], id) ~= value then
    redis.call('HSET', KEYS[1], id, value)
    changed = true
  end
end
if changed then
  redis.call('PUBLISH', ARGV[1], redis.call('INCR', KEYS[3]))
end
return redis.call('GET', KEYS[3]) or '0'
`;

/** read: KEYS = active hash, revoked set, version; ARGV = the version the caller has. Unchanged: {version} only. */
const READ = `
local v = redis.call('GET', KEYS[3]) or '0'
if v == ARGV[1] then return { v } end
return { v, redis.call('HGETALL', KEYS[1]), redis.call('SMEMBERS', KEYS[2]) }
`;

interface KeyCommands {
  tgKeysPublish(
    active: string,
    revoked: string,
    version: string,
    channel: string,
    ...entries: string[]
  ): Promise<string>;
  tgKeysRead(active: string, revoked: string, version: string, known: string): Promise<[string, string[]?, string[]?]>;
}

/**
 * Gateway keys shared by every instance through Redis (limit_store.redis_url), so that a key created or revoked
 * through any instance's admin API or the CLI takes effect on all of them within a second, even when each has
 * its own usage store. Under the key prefix: `keys:active` hash id -> {hash, workspace}, `keys:revoked` set of
 * ids, `keys:version` (bumped on every change, so an unchanged state costs one tiny read) and the pub/sub
 * channel `keys:changed`, which makes a change reach the other instances at once.
 */
export class SharedKeys {
  private readonly redis: Redis & KeyCommands;
  private subscriber: Redis | undefined;
  private readonly keys: [active: string, revoked: string, version: string];
  private readonly channel: string;

  constructor(
    private readonly url: string,
    prefix: string,
    private readonly onError: (err: Error) => void = () => undefined,
    timeoutMs = 1000,
  ) {
    this.keys = [`${prefix}keys:active`, `${prefix}keys:revoked`, `${prefix}keys:version`];
    this.channel = `${prefix}keys:changed`;
    const redis = createRedis(url, {
      commandTimeout: timeoutMs,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: (n) => Math.min(n * 100, 2000),
    });
    redis.on('error', onError);
    redis.defineCommand('tgKeysPublish', { lua: PUBLISH, numberOfKeys: 3 });
    redis.defineCommand('tgKeysRead', { lua: READ, numberOfKeys: 3 });
    this.redis = redis as Redis & KeyCommands;
  }

  /** Calls onChange whenever an instance (or the CLI) publishes a change; resubscribes after a reconnect. */
  subscribe(onChange: () => void): void {
    const sub = createRedis(this.url, { retryStrategy: (n) => Math.min(n * 100, 2000) });
    sub.on('error', this.onError);
    sub.on('message', () => onChange());
    sub.subscribe(this.channel).catch(this.onError);
    this.subscriber = sub;
  }

  /** Shares these keys: revoked ones are revoked everywhere, live ones become valid everywhere. */
  async publish(keys: readonly SharedKey[]): Promise<void> {
    if (keys.length === 0) return;
    const entries = keys.flatMap((k) => [
      k.id,
      k.revoked ? '1' : '0',
      JSON.stringify({ hash: k.hash, workspace: k.workspaceId }),
    ]);
    await this.redis.tgKeysPublish(...this.keys, this.channel, ...entries);
  }

  /** The shared keys; `known` itself when nothing changed since it was read. */
  async read(known: SharedKeyState = NO_SHARED_KEYS): Promise<SharedKeyState> {
    const [version, flat, revoked] = await this.redis.tgKeysRead(...this.keys, known.version);
    if (version === known.version || !flat || !revoked) return known;
    const active = new Map<string, { hash: string; workspaceId: string }>();
    for (let i = 0; i < flat.length; i += 2) {
      const v = JSON.parse(flat[i + 1]) as { hash: string; workspace: string };
      active.set(flat[i], { hash: v.hash, workspaceId: v.workspace });
    }
    return { version, active, revoked: new Set(revoked) };
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    this.redis.disconnect();
  }
}
