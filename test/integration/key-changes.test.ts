import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { hashGatewayKey } from '../../services/keys/key-ring';
import { openStore } from '../../storage/open';
import type { UsageStore } from '../../storage/store';
import { requirePostgres } from '../helpers/services';

const sha = (s: string) => hashGatewayKey(s);

/** The key change sequence (migration 011) the key sync reads deltas by, on a real store of each dialect. */
function defineKeyChangeSuite(env: () => { open: () => Promise<UsageStore>; raw: (sql: string) => Promise<void> }) {
  let store: UsageStore;
  beforeEach(async () => {
    store = await env().open();
  });
  afterEach(async () => {
    await store.close();
  });

  it('migration 011 numbers the keys already stored in creation order', async () => {
    await store.insertKey({ id: 'b', workspaceId: 'ws', hash: sha('b'), createdAt: 2000 });
    await store.insertKey({ id: 'a', workspaceId: 'ws', hash: sha('a'), createdAt: 1000 });
    await store.close();
    await env().raw(
      'DROP INDEX keys_updated_seq; ALTER TABLE keys DROP COLUMN updated_seq; DELETE FROM schema_migrations WHERE version = 11;',
    );
    store = await env().open();
    const changes = await store.keyChangesSince(0, 10);
    expect(changes.map((k) => [k.id, k.seq])).to.deep.equal([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('a creation and a revocation each come after the last change read, and nothing else does', async () => {
    await store.insertKey({ id: 'k1', workspaceId: 'ws', hash: sha('k1') });
    await store.insertKey({ id: 'k2', workspaceId: 'ws', hash: sha('k2') });
    const seen = (await store.keyChangesSince(0, 10)).at(-1)!.seq;
    expect(await store.keyChangesSince(seen, 10)).to.deep.equal([]);
    await store.touchKeys(['k1'], Date.now()); // last-used times are not changes the sync needs
    expect(await store.keyChangesSince(seen, 10)).to.deep.equal([]);
    expect(await store.revokeKey('k1')).to.equal(true);
    const after = await store.keyChangesSince(seen, 10);
    expect(after.map((k) => [k.id, k.revokedAt !== null])).to.deep.equal([['k1', true]]);
    expect(after[0].seq).to.be.greaterThan(seen);
    expect(await store.keyChangesSince(after[0].seq, 10)).to.deep.equal([]);
  });

  it('insertKeys stores a thousand keys in one transaction, or none of them when one is refused', async () => {
    const keys = Array.from({ length: 1000 }, (_, i) => ({ id: `bulk-${i}`, workspaceId: 'ws', hash: sha(`b${i}`) }));
    await store.insertKeys(keys);
    const changes = await store.keyChangesSince(0, 5000);
    expect(changes.map((k) => k.id)).to.deep.equal(keys.map((k) => k.id));
    expect(new Set(changes.map((k) => k.seq)).size).to.equal(1000);
    const clash = [
      { id: 'new-1', workspaceId: 'ws', hash: sha('new-1') },
      { ...keys[0], id: 'new-2' },
    ];
    let refused: unknown;
    await store.insertKeys(clash).catch((err: unknown) => (refused = err));
    expect(refused, 'a key whose hash is already stored is refused').to.be.instanceOf(Error);
    expect(
      (await store.listKeys()).some((k) => k.id === 'new-1'),
      'and the whole batch is rolled back',
    ).to.equal(false);
    expect((await store.keyChangesSince(0, 5000)).map((k) => k.id)).to.have.length(1000);
  });

  it('writers racing on two connections get distinct sequence numbers, none lost behind a later one', async () => {
    const other = await env().open();
    try {
      const writes = Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? store : other).insertKey({ id: `race-${i}`, workspaceId: 'ws', hash: sha(`race-${i}`) }),
      );
      await Promise.all(writes);
      const seqs = (await store.keyChangesSince(0, 100)).map((k) => k.seq);
      expect(seqs).to.deep.equal(Array.from({ length: 40 }, (_, i) => i + 1));
    } finally {
      await other.close();
    }
  });
}

describe('key change sequence: SQLite', () => {
  let dir: string;
  let n = 0;
  let path = '';
  beforeEach(() => {
    dir ??= mkdtempSync(join(tmpdir(), 'tollgate-key-changes-'));
    path = join(dir, `keys-${++n}.db`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  defineKeyChangeSuite(() => ({
    open: () => openStore(`sqlite:${path}`),
    raw: async (sql) => {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(path);
      db.exec(sql);
      db.close();
    },
  }));
});

describe('key change sequence: PostgreSQL', function () {
  let pgUrl = '';
  let schema = '';
  let n = 0;
  before(async function () {
    pgUrl = await requirePostgres(this, 'key change sequence on PostgreSQL');
  });
  beforeEach(() => {
    schema = `tollgate_keys_${process.pid}_${++n}`;
  });
  const client = async (sql: string, path = true) => {
    const c = new Client({ connectionString: pgUrl, options: path ? `-c search_path=${schema}` : undefined });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  afterEach(() => client(`DROP SCHEMA IF EXISTS ${schema} CASCADE`, false));
  defineKeyChangeSuite(() => ({ open: () => openStore(pgUrl, { schema }), raw: (sql) => client(sql) }));
});
