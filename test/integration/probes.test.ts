import { spawnSync } from 'node:child_process';
import { sleep } from '../helpers/wait';
import { accessSync, chmodSync, constants, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client as PgClient } from 'pg';
import { Client, request } from 'undici';
import { waitForRecords } from '../helpers/admin';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, startTestGateway, type TestGateway } from '../helpers/gateway';
import { scrape, total } from '../helpers/prometheus';
import { postgresThroughRelay } from '../helpers/tcp-proxy';
import { TestUpstream } from '../helpers/upstream';
import { requirePostgres, requireRedis, requireService } from '../helpers/services';

interface ProbeAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

async function probe(base: string, path: string, method: 'GET' | 'HEAD' = 'GET'): Promise<ProbeAnswer> {
  const res = await request(`${base}${path}`, { method });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/**
 * Polls until /readyz answers `status`, an HTTP status or the body's status (the checks are cached for about a second),
 * or the deadline passes.
 */
async function probeUntil(base: string, status: number | string, timeoutMs = 5000): Promise<ProbeAnswer> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe(base, '/readyz');
    if ((typeof status === 'number' ? answer.status : answer.json?.status) === status || Date.now() > deadline)
      return answer;
    await sleep(100);
  }
}

const chat = (gw: TestGateway) =>
  request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, authorization: `Bearer ${OPENAI_KEY}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Makes a file unwritable for this process: read-only mode, and as root (who writes through any mode) the
 * immutable attribute too. Returns the undo, or undefined when the file stayed writable (no chattr, or a file
 * system without the attribute).
 */
function makeUnwritable(file: string): (() => void) | undefined {
  chmodSync(file, 0o444);
  const root = process.getuid?.() === 0;
  if (root) spawnSync('chattr', ['+i', file]);
  const undo = () => {
    if (root) spawnSync('chattr', ['-i', file]);
    chmodSync(file, 0o644);
  };
  try {
    accessSync(file, constants.W_OK);
  } catch {
    return undo;
  }
  undo();
  return undefined;
}

describe('probes: GET /healthz and /readyz on the proxy port and the admin port', () => {
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() => upstream.reset());

  describe('a healthy gateway', () => {
    let gw: TestGateway;
    before(async () => (gw = await startTestGateway(upstream.url)));
    after(() => gw.stop());

    it('answer 200 on both ports without any key, and tell nothing of the deployment', async () => {
      const versions = Object.values(
        JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).dependencies as Record<string, string>,
      );
      for (const base of [gw.url, gw.adminUrl!]) {
        const health = await probe(base, '/healthz');
        expect(health.status, base).to.equal(200);
        expect(health.json).to.deep.equal({ status: 'ok' });
        const ready = await probe(base, '/readyz');
        expect(ready.status, base).to.equal(200);
        expect(ready.json).to.deep.equal({
          status: 'ready',
          checks: { store: 'ok', limit_store: 'not_configured', shutdown: 'ok' },
          failed: [],
          degraded: [],
        });
        for (const answer of [health, ready]) {
          expect(answer.headers['cache-control']).to.equal('no-store');
          for (const secret of [
            gw.dataDir,
            'sqlite',
            new URL(gw.url).port,
            new URL(gw.adminUrl!).port,
            upstream.url,
            process.version,
            ...versions,
          ]) {
            expect(answer.text).to.not.include(secret);
          }
        }
        expect((await probe(base, '/healthz', 'HEAD')).status).to.equal(200);
        expect((await probe(base, '/readyz', 'HEAD')).status).to.equal(200);
      }
    });

    it('are never proxied, recorded, logged or counted as requests', async () => {
      const before = await scrape(gw.adminUrl!);
      const logLines = gw.logs.length;
      for (let i = 0; i < 10; i++) {
        for (const base of [gw.url, gw.adminUrl!])
          for (const path of ['/healthz', '/readyz']) expect((await probe(base, path)).status).to.equal(200);
      }
      const res = await chat(gw);
      expect(res.statusCode).to.equal(200);
      await res.body.text();
      const records = await waitForRecords(gw, 1);
      // The one chat request is the only record, the only request the upstream saw and the only one counted.
      expect(records.map((r) => r.endpoint)).to.deep.equal(['chat.completions']);
      expect(upstream.received.map((r) => r.url)).to.deep.equal(['/openai/v1/chat/completions']);
      const after = await scrape(gw.adminUrl!);
      expect(total(after, 'tollgate_requests_total') - total(before, 'tollgate_requests_total')).to.equal(1);
      const requestLines = gw.logs.slice(logLines).filter((l) => JSON.parse(l).msg === 'request');
      expect(requestLines.map((l) => JSON.parse(l).path)).to.deep.equal(['/v1/chat/completions']);
    });

    it('other methods get the usual unknown-route answers', async () => {
      const proxy = await request(`${gw.url}/healthz`, { method: 'POST', body: '{}' });
      expect(proxy.statusCode).to.equal(404);
      expect(((await proxy.body.json()) as any).error.code).to.equal('route_not_found');
      const admin = await request(`${gw.adminUrl}/readyz`, { method: 'DELETE' });
      expect(admin.statusCode).to.equal(401);
      await admin.body.text();
    });
  });

  it('/readyz with probes.readiness.fail_on [store]: 503 naming the store while the SQLite file cannot be written, 200 again once it can', async function () {
    const gw = await startTestGateway(upstream.url, 'probes: { readiness: { fail_on: [store] } }');
    const dbFile = join(gw.dataDir, 'tollgate.db');
    const undo = makeUnwritable(dbFile);
    try {
      requireService(
        this,
        '/readyz with an unwritable store',
        !!undo,
        'the database file could not be made unwritable here (needs chattr +i as root, or a non-root user)',
      );
      for (const base of [gw.url, gw.adminUrl!]) {
        const ready = await probeUntil(base, 503);
        expect(ready.status, base).to.equal(503);
        expect(ready.json).to.deep.equal({
          status: 'not_ready',
          checks: { store: 'failed', limit_store: 'not_configured', shutdown: 'ok' },
          failed: ['store'],
          degraded: [],
        });
        expect(ready.text).to.not.include(gw.dataDir);
        expect((await probe(base, '/healthz')).status, 'alive all the same').to.equal(200);
      }
      // The reason is in the log, once (not at every probe).
      const failures = gw.logs.filter((l) => JSON.parse(l).msg === 'readiness check failed');
      expect(failures).to.have.length(1);
      expect(JSON.parse(failures[0])).to.include({ check: 'usage store' });
      undo!();
      for (const base of [gw.url, gw.adminUrl!])
        expect((await probeUntil(base, 200)).json.status, base).to.equal('ready');
    } finally {
      undo?.();
      await gw.stop();
    }
  });

  it('/readyz with Redis at a port nothing listens on: 503 naming the limit store under on_error: closed, 200 degraded under open', async () => {
    const port = await closedPort();
    for (const onError of ['closed', 'open'] as const) {
      const gw = await startTestGateway(
        upstream.url,
        `limit_store: { redis_url: "redis://127.0.0.1:${port}", on_error: ${onError} }`,
      );
      try {
        for (const base of [gw.url, gw.adminUrl!]) {
          const ready = await probe(base, '/readyz');
          const down: ['limit_store'] = ['limit_store'];
          expect(ready.status, `${base} ${onError}`).to.equal(onError === 'closed' ? 503 : 200);
          expect(ready.json).to.deep.equal({
            status: onError === 'closed' ? 'not_ready' : 'degraded',
            checks: { store: 'ok', limit_store: 'failed', shutdown: 'ok' },
            failed: onError === 'closed' ? down : [],
            degraded: onError === 'closed' ? [] : down,
          });
          expect(ready.text).to.not.include(String(port));
          expect((await probe(base, '/healthz')).status).to.equal(200);
        }
      } finally {
        await gw.stop();
      }
    }
  });

  it('/readyz on PostgreSQL: 200 ready while the server answers, 200 degraded naming the store while its connections are cut, and the proxy answers', async function () {
    const PG_URL = await requirePostgres(this, '/readyz on PostgreSQL');
    const { relay, schema, storageYaml } = await postgresThroughRelay(PG_URL, 'tg_probes');
    const gw = await startTestGateway(upstream.url, storageYaml);
    try {
      expect((await probe(gw.adminUrl!, '/readyz')).json.checks.store).to.equal('ok');
      relay.cut();
      const down = await probeUntil(gw.url, 'degraded');
      expect(down.status).to.equal(200);
      expect(down.json).to.deep.equal({
        status: 'degraded',
        checks: { store: 'failed', limit_store: 'not_configured', shutdown: 'ok' },
        failed: [],
        degraded: ['store'],
      });
      expect(down.text).to.not.include(String(relay.port));
      const res = await chat(gw);
      expect(res.statusCode, 'the proxy answers without its store').to.equal(200);
      await res.body.text();
      relay.restore();
      expect((await probeUntil(gw.url, 'ready')).json.status).to.equal('ready');
    } finally {
      relay.restore();
      await gw.stop();
      await relay.stop();
      const c = new PgClient({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    }
  });

  it('/readyz: 200 with the limit store ok when Redis answers', async function () {
    const redisUrl = await requireRedis(this, '/readyz with Redis');
    const gw = await startTestGateway(
      upstream.url,
      `limit_store: { redis_url: "${redisUrl}", key_prefix: "tg-probes-${process.pid}:" }`,
    );
    try {
      const ready = await probeUntil(gw.adminUrl!, 200);
      expect(ready.json.checks).to.deep.equal({ store: 'ok', limit_store: 'ok', shutdown: 'ok' });
    } finally {
      await gw.stop();
    }
  });

  it('/readyz: 503 draining on the admin port while shutdown waits for a request in flight; the proxy port takes no new connection', async () => {
    const gw = await startTestGateway(upstream.url);
    upstream.respondWith((req) =>
      req.url.endsWith('/chat/completions')
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: Buffer.from('{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":1}}'),
            headerDelayMs: 1500,
          }
        : undefined,
    );
    const client = new Client(gw.url);
    try {
      expect((await probe(gw.adminUrl!, '/readyz')).status).to.equal(200);
      const slow = chat(gw);
      while (upstream.received.length === 0) await sleep(10);
      const stopped = gw.stop();
      const draining = await probeUntil(gw.adminUrl!, 503, 3000);
      expect(draining.json).to.deep.equal({
        status: 'not_ready',
        checks: { store: 'ok', limit_store: 'not_configured', shutdown: 'draining' },
        failed: ['shutdown'],
        degraded: [],
      });
      expect((await probe(gw.adminUrl!, '/healthz')).status, 'alive while draining').to.equal(200);
      const refused = await client.request({ method: 'GET', path: '/readyz' }).then(
        () => 'answered',
        (err: NodeJS.ErrnoException) => err.code,
      );
      expect(refused).to.equal('ECONNREFUSED');
      const res = await slow;
      expect(res.statusCode, 'the request in flight finishes').to.equal(200);
      await res.body.text();
      await stopped;
    } finally {
      await client.close();
    }
  });
});
