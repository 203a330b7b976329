import { Redis } from 'ioredis';

/** How the suites begin their Redis key prefixes; each prefix names the test process's pid as a segment of its own. */
const TEST_PREFIXES = ['tollgate-test:', 'tg-', 'tollgate_'];

/** A key this test process made: a test prefix, and the pid between separators (never a longer number holding it). */
export function ownTestKey(key: string, pid = process.pid): boolean {
  if (!TEST_PREFIXES.some((p) => key.startsWith(p))) return false;
  return new RegExp(`(?:^|[-:_])${pid}(?:[-:_]|$)`).test(key);
}

/**
 * Removes the Redis keys this test process made (other processes' runs, sharing the server, keep theirs): limit
 * counters expire on their own, but key-sync entries have no TTL. Returns how many were removed.
 */
export async function removeOwnRedisKeys(url: string, pid = process.pid): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  try {
    await redis.connect();
    let removed = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${pid}*`, 'COUNT', 1000);
      cursor = next;
      const own = keys.filter((k) => ownTestKey(k, pid));
      if (own.length > 0) removed += await redis.unlink(...own);
    } while (cursor !== '0');
    return removed;
  } finally {
    redis.disconnect();
  }
}
