import { execFile } from 'node:child_process';
import { sleep } from '../helpers/wait';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { request } from 'undici';
import { adminGet, waitForRecords } from '../helpers/admin';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const run = promisify(execFile);
const CLI = resolve(PROJECT_ROOT, 'dist/cli/index.js');

describe('gateway keys: create, use, revoke', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(
      upstream.url,
      'workspaces: [{ id: default, keys: [{ id: test, key: "${GATEWAY_KEY}" }] }, { id: research, name: Research }]',
    );
  });
  after(async () => {
    await gw.stop();
    await upstream.stop();
  });

  const chatWith = async (key: string, url = gw.url) => {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': key, authorization: `Bearer ${OPENAI_KEY}` },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
    });
    const body = (await res.body.json()) as any;
    return { status: res.statusCode, code: body.error?.code as string | undefined };
  };
  const admin = (method: 'POST' | 'DELETE', path: string, body?: object) =>
    request(`${gw.adminUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });

  /** Polls until the key gives the wanted status; returns how long it took. */
  async function until(key: string, status: number, url = gw.url): Promise<number> {
    const started = Date.now();
    while ((await chatWith(key, url)).status !== status) {
      if (Date.now() - started > 3000) throw new Error(`key never gave ${status}`);
      await sleep(25);
    }
    return Date.now() - started;
  }

  it('admin API: a created key is shown once, works for its workspace, and is refused within a second of revocation', async () => {
    const res = await admin('POST', '/api/keys', { workspace: 'research', label: 'notebook' });
    expect(res.statusCode).to.equal(201);
    const created = (await res.body.json()) as any;
    expect(created.key).to.match(/^tg_[A-Za-z0-9_-]{43}$/);
    expect(created).to.include({ workspace: 'research', label: 'notebook', revoked: false });

    expect((await chatWith(created.key)).status).to.equal(200);
    const [record] = await waitForRecords(gw, 1);
    expect(record.key_id).to.equal(created.id);
    expect(record.workspace).to.equal('research');

    const listed = (await adminGet(gw, '/api/keys')).data;
    const entry = listed.find((k: any) => k.id === created.id);
    expect(entry.label).to.equal('notebook');
    expect(JSON.stringify(listed), 'the list never shows a key or its hash').to.not.include(created.key);

    const del = await admin('DELETE', `/api/keys/${created.id}`);
    expect(del.statusCode).to.equal(200);
    await del.body.text();
    expect(await until(created.key, 401)).to.be.lessThan(1000);
    expect((await chatWith(created.key)).code).to.equal('gateway_key_invalid');
    const again = await admin('DELETE', `/api/keys/${created.id}`);
    expect(again.statusCode).to.equal(404);
    await again.body.text();
  });

  it('a stored key revoked right after an instance started is refused by that instance within a second', async () => {
    const res = await admin('POST', '/api/keys', { label: 'restart' });
    const created = (await res.body.json()) as any;
    // A second instance on the same usage store: its ring starts with the stored keys.
    const other = await startTestGateway(upstream.url, `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }`);
    try {
      expect((await chatWith(created.key, other.url)).status).to.equal(200);
      const del = await admin('DELETE', `/api/keys/${created.id}`); // through the first instance: the second only sees the table
      expect(del.statusCode).to.equal(200);
      await del.body.text();
      expect(await until(created.key, 401, other.url)).to.be.lessThan(1000);
    } finally {
      await other.stop();
    }
  });

  it('refuses a key for an unknown workspace', async () => {
    const res = await admin('POST', '/api/keys', { workspace: 'nope' });
    expect(res.statusCode).to.equal(400);
    expect(((await res.body.json()) as any).error.message).to.include('Unknown workspace');
  });

  it('CLI: keys created and revoked from the terminal reach the running gateway within a second', async () => {
    const config = join(gw.dataDir, 'cli.yaml');
    writeFileSync(
      config,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }\nworkspaces: [{ id: default }, { id: research }]\n`,
    );
    const { stdout } = await run(process.execPath, [CLI, 'keys', 'create', '--label', 'ci runner', '--config', config]);
    const key = /(tg_[A-Za-z0-9_-]{43})/.exec(stdout)![1];
    const id = /Created key (\S+)/.exec(stdout)![1];
    expect(await until(key, 200)).to.be.lessThan(1000);

    await run(process.execPath, [CLI, 'keys', 'revoke', id, '--config', config]);
    expect(await until(key, 401)).to.be.lessThan(1000);

    const list = await run(process.execPath, [CLI, 'keys', 'list', '--config', config]);
    expect(list.stdout).to.match(new RegExp(`${id}\\s+default\\s+ci runner.*revoked`));
    expect(list.stdout).to.not.include(key);
  });

  it('admin API: POST /api/keys/bulk creates a thousand working keys in one call, or none when an entry is refused', async () => {
    const started = Date.now();
    const res = await admin('POST', '/api/keys/bulk', {
      keys: Array.from({ length: 1000 }, (_, i) => ({ workspace: i % 2 ? 'research' : 'default', label: `bulk ${i}` })),
    });
    const took = Date.now() - started;
    expect(res.statusCode).to.equal(201);
    const { data } = (await res.body.json()) as {
      data: { id: string; key: string; workspace: string; label: string }[];
    };
    expect(data).to.have.length(1000);
    expect(data[1]).to.include({ workspace: 'research', label: 'bulk 1' });
    expect(new Set(data.map((k) => k.key)).size).to.equal(1000);
    console.log(`      (1,000 keys created in one call: ${took} ms)`);
    // Answered once they work on this instance.
    for (const k of [data[0], data[499], data[999]]) expect((await chatWith(k.key)).status).to.equal(200);

    const before = (await adminGet(gw, '/api/keys?limit=1000')).data.length;
    const refused = await admin('POST', '/api/keys/bulk', { keys: [{ label: 'fine' }, { workspace: 'nope' }] });
    expect(refused.statusCode).to.equal(400);
    expect(((await refused.body.json()) as any).error.param).to.equal('keys[1].workspace');
    const tooMany = await admin('POST', '/api/keys/bulk', { keys: Array(1001).fill({}) });
    expect(tooMany.statusCode).to.equal(400);
    await tooMany.body.text();
    expect((await adminGet(gw, '/api/keys?limit=1000')).data.length, 'nothing created').to.equal(before);
  });

  it('CLI: keys create --count and keys import store many keys at once, and they work', async () => {
    const config = join(gw.dataDir, 'cli-bulk.yaml');
    writeFileSync(
      config,
      `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }\nworkspaces: [{ id: default }, { id: research }]\n`,
    );
    const created = await run(process.execPath, [
      CLI,
      'keys',
      'create',
      '--count',
      '5',
      '-w',
      'research',
      '--json',
      '--config',
      config,
    ]);
    const keys = created.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: string; workspace: string });
    expect(keys.map((k) => k.workspace)).to.deep.equal(Array(5).fill('research'));
    expect(await until(keys[4].key, 200)).to.be.lessThan(1000);

    const own = `tg_imported_${'x'.repeat(30)}`;
    const file = join(gw.dataDir, 'import.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ key: own, workspace: 'research', label: 'from the old gateway', id: 'imported-1' })}\n` +
        `${JSON.stringify({ sha256: 'ab'.repeat(32), id: 'imported-2' })}\n`,
    );
    const imported = await run(process.execPath, [CLI, 'keys', 'import', file, '--json', '--config', config]);
    expect(JSON.parse(imported.stdout).imported.map((k: any) => [k.id, k.workspace])).to.deep.equal([
      ['imported-1', 'research'],
      ['imported-2', 'default'],
    ]);
    expect(imported.stdout).to.not.include(own);
    expect(await until(own, 200)).to.be.lessThan(1000);
    const list = await run(process.execPath, [CLI, 'keys', 'list', '--config', config]);
    expect(list.stdout).to.match(/imported-1\s+research\s+from the old gateway/);
    expect(list.stdout).to.not.include(own);

    writeFileSync(file, `${JSON.stringify({ key: 'short' })}\n`);
    const bad = await run(process.execPath, [CLI, 'keys', 'import', file, '--config', config]).catch((err: any) => err);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.include('entry 1: needs "key"');
  });
});
