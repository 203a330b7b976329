import { execFile } from 'node:child_process';
import { sleep } from '../helpers/wait';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { request } from 'undici';
import '../helpers/root-hooks'; // the observers that collect created keys (also loaded by .mocharc.json)
import { waitForRecords } from '../helpers/admin';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import { call, chatBody, startGateway } from '../helpers/reliability';
import {
  knownSecrets,
  registeredGateways,
  scanAlertPayloads,
  scanGateway,
  type RegisteredGateway,
} from '../helpers/secret-scan';

const run = promisify(execFile);

/**
 * The suite-wide secret scan itself (helpers/secret-scan.ts, run by the root hook after all suites): gateways
 * register themselves, their admin answers are kept when they stop, created keys join the list, and a planted
 * leak is found and located (file and line). The leaks here are written into a scratch entry that is not
 * registered, so they never fail the run.
 */
describe('reliability: the suite-wide secret scan', function () {
  this.timeout(30_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startGateway(upstream.url);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('every gateway the helpers start registers itself; its admin answers are read when it stops', async () => {
    expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
    const entry = registeredGateways().find((g) => g.dataDir === gw.dataDir)!;
    expect(entry, 'registered').to.not.equal(undefined);
    expect(entry.startedAt).to.match(/^test\/reliability\/secret-scan\.test\.ts:\d+$/);
    expect(entry.logs()).to.equal(gw.logs);
    const other = await startGateway(upstream.url);
    const res = await call(other, '/v1/chat/completions', { body: chatBody() });
    const otherEntry = registeredGateways().find((g) => g.dataDir === other.dataDir)!;
    expect(otherEntry.answers).to.deep.equal([]);
    await waitForRecords(other, 1, 10_000); // the batched writer: the snapshot taken at stop must have the record
    await other.stop();
    const paths = otherEntry.answers.map((a) => a.path.split('?')[0]).sort();
    expect(paths).to.include.members([
      '/api/requests',
      '/api/usage',
      '/api/usage.csv',
      '/api/keys',
      '/api/budgets',
      '/api/alerts',
      '/api/info',
      '/api/dimensions',
    ]);
    const records = otherEntry.answers.find((a) => a.path.startsWith('/api/requests'))!;
    expect(JSON.parse(records.text).data.map((r: any) => r.id)).to.deep.equal([res.headers['x-gateway-request-id']]);
  });

  it('keys handed out during the run join the list: admin POST /api/keys answers and `tollgate keys create` output', async () => {
    const created = await request(`${gw.adminUrl}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"label":"scan"}',
    });
    const { key } = (await created.body.json()) as { key: string };
    expect(key).to.match(/^tg_/);
    expect(knownSecrets()).to.include(key);

    const config = join(gw.dataDir, 'cli.yaml');
    writeFileSync(config, `storage: { url: "sqlite:${gw.dataDir}/tollgate.db" }\nworkspaces: [{ id: default }]\n`);
    const { stdout } = await run(process.execPath, [
      resolve(PROJECT_ROOT, 'dist/cli/index.js'),
      'keys',
      'create',
      '--label',
      'scan cli',
      '--config',
      config,
    ]);
    const cliKey = /(tg_[A-Za-z0-9_-]{43})/.exec(stdout)![1];
    expect(knownSecrets()).to.include(cliKey);
    // Both are real keys: they work through the proxy (and are then scanned for in everything it wrote). A key
    // created from the terminal reaches the running gateway within a second (key sync).
    const status = async (k: string) =>
      (
        await call(gw, '/v1/chat/completions', {
          body: chatBody(),
          headers: { 'content-type': 'application/json', 'x-gateway-key': k, authorization: `Bearer ${OPENAI_KEY}` },
        })
      ).status;
    expect(await status(key)).to.equal(200);
    const deadline = Date.now() + 3000;
    while ((await status(cliKey)) !== 200) {
      if (Date.now() > deadline) expect.fail('the CLI key never worked');
      await sleep(50);
    }
  });

  it('finds a planted leak in a log line, an admin answer or a file, and says where (file and line)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-scan-'));
    mkdirSync(join(dir, 'data'));
    const created = 'tg_' + 'A'.repeat(20) + '-' + 'b'.repeat(22); // shaped like a generated key, never seen being created
    writeFileSync(
      join(dir, 'data', 'usage-spill.jsonl'),
      `{"id":"1"}\n{"id":"2"}\n{"id":"3","tags":{"k":"${OPENAI_KEY}"}}\n`,
    );
    writeFileSync(join(dir, 'gateway.config.yaml'), `key: "${OPENAI_KEY}"\n`); // the test's own input: not scanned
    const scratch: RegisteredGateway = {
      kind: 'process',
      startedAt: 'test/x.test.ts:1',
      dataDir: dir,
      answers: [{ path: '/api/keys', status: 200, text: `{"data":[{"label":"${TEST_ADMIN_TOKEN}"}]}` }],
      snapshotProblems: [],
      logs: () => [
        '{"msg":"fine"}',
        `{"msg":"bad","key":"${created}"}`,
        'Tollgate created a gateway key:',
        '',
        `    ${created}`,
      ],
    };
    const { findings, files } = scanGateway(scratch, [OPENAI_KEY, TEST_ADMIN_TOKEN]);
    expect(files).to.equal(1);
    const where = findings.map((f) => `${f.where.split(' (')[0].replace(dir, '<dir>')} line ${f.line}`);
    expect(where).to.deep.equal([
      'log of the process gateway started at test/x.test.ts:1 line 2', // the announcement (line 5) is where that key belongs
      'admin answer GET /api/keys of the process gateway started at test/x.test.ts:1 line 1',
      'file <dir>/data/usage-spill.jsonl line 3',
    ]);
    for (const f of findings)
      expect(f.excerpt).to.not.include(OPENAI_KEY).and.not.include(TEST_ADMIN_TOKEN).and.not.include(created);
  });

  it('scans the alert payloads the test receivers took', () => {
    const payloads = [
      { text: '{"kind":"budget.threshold","summary":"fine"}', where: 'alert payload received by ops' },
      {
        text: `{"kind":"budget.threshold",\n"summary":"${TEST_ADMIN_TOKEN}"}`,
        where: 'alert payload received by slack',
      },
    ];
    const findings = scanAlertPayloads([OPENAI_KEY, TEST_ADMIN_TOKEN], payloads);
    expect(findings.map((f) => `${f.where} line ${f.line}`)).to.deep.equal(['alert payload received by slack line 2']);
  });
});
