import { expect } from 'chai';
import { captureLogs } from '../../testing';
import { generateGatewayKey, hashGatewayKey, KeyRing } from '../../services/keys/key-ring';
import { KeySync } from '../../services/keys/key-sync';
import { SqliteUsageStore } from '../../storage/sqlite-store';

describe('KeySync.refresh: a key created through this instance works once refresh resolves', () => {
  it('also when a sync that read the keys before the creation was under way', async () => {
    const store = new SqliteUsageStore(':memory:');
    await store.migrate();
    // A store whose reads take a while (as a real one does); the periodic sync's read is held until the admin API
    // has created a key, so that sync applies what it read before the creation.
    let hold: (() => void) | undefined;
    const read = store.keyChangesSince.bind(store);
    store.keyChangesSince = async (seq: number, limit: number) => {
      const keys = await read(seq, limit);
      if (!hold) await new Promise<void>((resolve) => (hold = resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      return keys;
    };
    const ring = new KeyRing();
    const sync = new KeySync(
      ring,
      store,
      [{ id: 'default', name: 'default', keys: [] } as never],
      captureLogs().logger,
    );
    const underWay = sync.refresh();
    while (!hold) await new Promise((r) => setImmediate(r));

    const key = generateGatewayKey();
    await store.insertKey({ id: 'k-new', workspaceId: 'default', hash: hashGatewayKey(key) });
    const afterCreation = sync.refresh(); // what the admin API awaits before answering
    hold();
    await underWay;
    await afterCreation;
    expect(ring.verify(key)?.keyId, 'the key works as soon as refresh() resolved').to.equal('k-new');
    await sync.stop();
    await store.close();
  });
});
