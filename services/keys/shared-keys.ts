import type { Redis } from 'ioredis';
import { createRedis } from '../redis-client';

/** A stored gateway key as shared through Redis: enough to verify it (its hash), never the key itself. */
export interface SharedKey {
  id: string;
  hash: string;
  workspaceId: string;
  revoked: boolean;
}

/** Keys changed in Redis after the sequence a reader had, in change order. */
export interface SharedKeyChanges {
  /** Redis's current change sequence; below the reader's when Redis lost its data (a flush, a new server). */
  seq: number;
  /** The sequence of the last change in `keys` (the reader's new position), or the reader's own when none. */
  upTo: number;
  keys: SharedKey[];
}

/**
 * publish: KEYS = entries hash, changes sorted set, seq; ARGV = channel, then id, revoked (1|0), value per key.
 * An entry that changed gets the next sequence, also as its score in the changes set (one member per key, so the
 * set holds as many members as there are keys). A revoked entry is revoked for good. When anything changed, the
 * new sequence is announced on the channel.
 */
const PUBLISH = `
local seq = nil
for i = 2, #ARGV, 3 do
  local id, value = ARGV[i], ARGV[i + 2]
  local current = redis.call('HGET', KEYS[1], id)
  local revoked = current and string.find(current, '"revoked":true', 1, true)
  if not revoked and current ~= value then
    redis.call('HSET', KEYS[1], id, value)
    seq = redis.call('INCR', KEYS[3])
    redis.call('ZADD', KEYS[2], seq, id)
  end
end
if seq then redis.call('PUBLISH', ARGV[1], seq) end
return tonumber(redis.call('GET', KEYS[3]) or '0')
`;

/** read: KEYS = entries, changes, seq; ARGV = the reader's sequence, at most how many. Returns {seq, ids+scores, values}. */
const READ = `
local seq = tonumber(redis.call('GET', KEYS[3]) or '0')
if seq <= tonumber(ARGV[1]) then return { seq } end
local changed = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local ids = {}
for i = 1, #changed, 2 do ids[#ids + 1] = changed[i] end
if #ids == 0 then return { seq } end
return { seq, changed, redis.call('HMGET', KEYS[1], unpack(ids)) }
`;

/** Changes read from Redis at a time (also bounds the Lua stack of one HMGET). */
const READ_BATCH = 1000;

interface KeyCommands {
  tgKeysPublish(entries: string, changes: string, seq: string, channel: string, ...args: string[]): Promise<number>;
  tgKeysRead(
    entries: string,
    changes: string,
    seq: string,
    since: number,
    limit: number,
  ): Promise<[number, string[]?, (string | null)[]?]>;
}

/**
 * Gateway keys shared by every instance through Redis (limit_store.redis_url), so that a key created or revoked
 * through any instance's admin API or the CLI takes effect on all of them within a second, even when each has
 * its own usage store. Under the key prefix: `keys:entries` hash id -> {hash, workspace, revoked}, `keys:changes`
 * sorted set of ids scored by the sequence of their last change, `keys:seq` the last sequence, so that a reader
 * fetches only what changed since it last read, and the pub/sub channel `keys:changed`, which makes a change
 * reach the other instances at once.
 */
export class SharedKeys {
  private readonly redis: Redis & KeyCommands;
  private subscriber: Redis | undefined;
  private readonly keys: [entries: string, changes: string, seq: string];
  private readonly channel: string;

  constructor(
    private readonly url: string,
    prefix: string,
    private readonly onError: (err: Error) => void = () => undefined,
    timeoutMs = 1000,
  ) {
    this.keys = [`${prefix}keys:entries`, `${prefix}keys:changes`, `${prefix}keys:seq`];
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
    for (let i = 0; i < keys.length; i += READ_BATCH) {
      const entries = keys
        .slice(i, i + READ_BATCH)
        .flatMap((k) => [
          k.id,
          k.revoked ? '1' : '0',
          JSON.stringify({ hash: k.hash, workspace: k.workspaceId, revoked: k.revoked }),
        ]);
      await this.redis.tgKeysPublish(...this.keys, this.channel, ...entries);
    }
  }

  /** The keys changed after sequence `since`, at most READ_BATCH of them: read again from `upTo` for more. */
  async changesSince(since: number): Promise<SharedKeyChanges> {
    const [seq, changed, values] = await this.redis.tgKeysRead(...this.keys, since, READ_BATCH);
    const keys: SharedKey[] = [];
    let upTo = since;
    if (changed && values) {
      for (let i = 0; i < values.length; i++) {
        upTo = Number(changed[2 * i + 1]);
        const value = values[i];
        if (value === null) continue;
        const v = JSON.parse(value) as { hash: string; workspace: string; revoked: boolean };
        keys.push({ id: changed[2 * i], hash: v.hash, workspaceId: v.workspace, revoked: v.revoked });
      }
    }
    return { seq: Number(seq), upTo, keys };
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    this.redis.disconnect();
  }
}
