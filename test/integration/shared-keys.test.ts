import { expect } from 'chai';
import { SharedKeys, type SharedKey } from '../../services/keys/shared-keys';
import { requireRedis } from '../helpers/services';

/** The Redis key mirror read by deltas (keys:entries, keys:changes, keys:seq), on a real Redis. */
describe('SharedKeys: keys shared through Redis, read by change sequence', function () {
  let shared: SharedKeys;
  before(async function () {
    const url = await requireRedis(this, 'the Redis key mirror');
    shared = new SharedKeys(url, `tollgate-test:${process.pid}:${Date.now()}:`);
  });
  after(() => shared?.close());

  const key = (i: number, revoked = false): SharedKey => ({
    id: `k${i}`,
    hash: i.toString(16).padStart(64, '0'),
    workspaceId: 'ws',
    revoked,
  });

  async function readAll(since: number): Promise<{ upTo: number; keys: SharedKey[] }> {
    const keys: SharedKey[] = [];
    for (;;) {
      const page = await shared.changesSince(since);
      keys.push(...page.keys);
      if (page.upTo === since || page.upTo >= page.seq) return { upTo: page.upTo, keys };
      since = page.upTo;
    }
  }

  it('a reader gets every key once, then only what changed: a revocation, never an unrevocation', async () => {
    await shared.publish(Array.from({ length: 2500 }, (_, i) => key(i)));
    const first = await readAll(0);
    expect(first.keys).to.have.length(2500);
    expect((await shared.changesSince(first.upTo)).keys, 'nothing changed').to.deep.equal([]);

    await shared.publish([key(7), key(8)]); // republished unchanged: not a change
    expect((await shared.changesSince(first.upTo)).keys).to.deep.equal([]);

    await shared.publish([key(7, true)]);
    const revoked = await readAll(first.upTo);
    expect(revoked.keys).to.deep.equal([key(7, true)]);

    await shared.publish([key(7)]); // an instance that has not seen the revocation yet
    expect((await shared.changesSince(revoked.upTo)).keys, 'a revoked key stays revoked').to.deep.equal([]);
  });
});
