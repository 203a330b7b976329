/**
 * The root hook's Redis clean-up (helpers/redis-cleanup.ts): it removes the keys of this test process's prefixes, and
 * never a key of another run sharing the server (another pid, or a pid that merely contains this one's digits).
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { ownTestKey, removeOwnRedisKeys } from '../helpers/redis-cleanup';
import { requireRedis } from '../helpers/services';

describe("the test run's Redis keys are removed at its end", () => {
  it('knows its own keys by prefix and pid segment', () => {
    expect(ownTestKey('tollgate-test:4242:17:keys:keys:seq', 4242)).to.equal(true);
    expect(ownTestKey('tg-alerts-4242-mx1:budget:x', 4242)).to.equal(true);
    expect(ownTestKey('tollgate_four_4242_17:budget', 4242)).to.equal(true);
    expect(ownTestKey('tollgate-test:14242:17:keys', 4242)).to.equal(false);
    expect(ownTestKey('tollgate-test:42420:17:keys', 4242)).to.equal(false);
    expect(ownTestKey('tollgate:budget:4242:x', 4242), 'not a test prefix').to.equal(false);
  });

  it('removes only the keys of the pid given, with or without a TTL', async function () {
    const url = await requireRedis(this, 'Redis clean-up');
    const redis = new Redis(url);
    // A made-up pid well above any real one, so that no running suite's keys are touched.
    const pid = 4_000_000_000 + (process.pid % 1000);
    const mine = [`tollgate-test:${pid}:1:keys:keys:seq`, `tg-x-${pid}-y:budget`];
    const theirs = [`tollgate-test:${pid}1:1:keys:keys:seq`];
    try {
      await redis.set(mine[0], '1');
      await redis.set(mine[1], '1', 'EX', 600);
      await redis.set(theirs[0], '1', 'EX', 600);
      expect(await removeOwnRedisKeys(url, pid)).to.equal(2);
      expect(await redis.exists(...mine)).to.equal(0);
      expect(await redis.exists(...theirs)).to.equal(1);
    } finally {
      await redis.del(...mine, ...theirs);
      redis.disconnect();
    }
  });
});
