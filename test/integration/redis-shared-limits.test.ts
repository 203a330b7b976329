import { execFile } from 'node:child_process';
import { sleep } from '../helpers/wait';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { request } from 'undici';
import { fixtureBytes, PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, startTestGateway, TEST_ADMIN_TOKEN, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/process';
import { freePort, startRedis } from '../helpers/redis-server';
import { requireRedis, requireRedisServer } from '../helpers/services';
import { sseChunks, TestUpstream } from '../helpers/upstream';

const run = promisify(execFile);

const headers = {
  'content-type': 'application/json',
  'x-gateway-key': TEST_GATEWAY_KEY,
  authorization: `Bearer ${OPENAI_KEY}`,
};
const chat = (url: string, stream = false, key = TEST_GATEWAY_KEY) =>
  request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...headers, 'x-gateway-key': key },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream, max_tokens: 50 }),
  });
const statusOf = async (url: string, key: string) => {
  const res = await chat(url, false, key);
  await res.body.text();
  return res.statusCode;
};
/** Polls until the key gives the wanted status on that instance; returns how long it took. */
async function until(url: string, key: string, status: number): Promise<number> {
  const started = Date.now();
  while ((await statusOf(url, key)) !== status) {
    if (Date.now() - started > 5000) throw new Error(`key never gave ${status} on ${url}`);
    await sleep(20);
  }
  return Date.now() - started;
}

/** A gateway process with an admin listener (on a port it picks), its own SQLite store, and the shared Redis. */
interface Instance extends GatewayProcess {
  admin: string;
}
async function spawnWithAdmin(body: string): Promise<Instance> {
  const p = await spawnGateway(`
server: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0, token: "${TEST_ADMIN_TOKEN}" }
storage: { url: "sqlite:./tollgate.db" }
${body}`);
  if (!p.adminUrl) throw new Error(`the gateway did not report its admin listener: ${p.stderr()}`);
  return { ...p, admin: p.adminUrl };
}
async function adminCall(i: Instance, method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<any> {
  const res = await request(`${i.admin}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.body.json()) as any;
  expect(res.statusCode, `${method} ${path}: ${JSON.stringify(json)}`).to.be.oneOf([200, 201]);
  return json;
}

describe('limits, keys and budgets shared through one Redis (REDIS_URL)', () => {
  let redisUrl: string;
  before(async function () {
    redisUrl = await requireRedis(this, 'limits, keys and budgets shared through Redis');
  });

  describe('two gateway processes sharing one Redis enforce one limit', () => {
    const upstream = new TestUpstream();
    let a: GatewayProcess;
    let b: GatewayProcess;

    before(async () => {
      await upstream.start();
      const yaml = `
server: { host: 127.0.0.1, port: 0 }
storage: { url: "sqlite:./tollgate.db" }
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${process.pid}:${Date.now()}:" }
workspaces:
  - id: default
    keys: [{ id: ci, key: "\${GATEWAY_KEY}" }]
    limits: { requests_per_minute: 10, concurrent_streams: 2 }
${providerBlock(upstream.url)}`;
      [a, b] = await Promise.all([spawnGateway(yaml), spawnGateway(yaml)]);
    });
    after(async () => {
      await Promise.all([a && stopGateway(a), b && stopGateway(b)]);
      await upstream.stop();
    });

    it('requests_per_minute 10 across both: exactly 10 of 20 alternating requests pass', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await chat(i % 2 === 0 ? a.url : b.url);
        await res.body.text();
        statuses.push(res.statusCode);
      }
      expect(statuses.filter((s) => s === 200)).to.have.length(10);
      expect(statuses.filter((s) => s === 429)).to.have.length(10);
    });

    it('concurrent_streams 2 across both: a third stream on the other instance is refused', async () => {
      // The per-minute bucket of the previous test is empty: use a fresh minute's worth by waiting is too slow,
      // so this test runs its own pair of processes with only the concurrency limit.
      const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
      upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 80 }));
      const yaml = `
server: { host: 127.0.0.1, port: 0 }
storage: { url: "sqlite:./tollgate.db" }
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${process.pid}:${Date.now()}:c:" }
workspaces:
  - id: default
    keys: [{ id: ci, key: "\${GATEWAY_KEY}" }]
    limits: { concurrent_streams: 2 }
${providerBlock(upstream.url)}`;
      const [c, d] = await Promise.all([spawnGateway(yaml), spawnGateway(yaml)]);
      try {
        const s1 = await chat(c.url, true);
        const s2 = await chat(d.url, true);
        const s3 = await chat(d.url, true);
        expect([s1.statusCode, s2.statusCode, s3.statusCode]).to.deep.equal([200, 200, 429]);
        await Promise.all([s1.body.text(), s2.body.text(), s3.body.text()]);
        const s4 = await chat(c.url, true);
        expect(s4.statusCode, 'slots were released when the streams ended').to.equal(200);
        await s4.body.text();
      } finally {
        await Promise.all([stopGateway(c), stopGateway(d)]);
      }
    });
  });

  describe('gateway keys shared through Redis by two processes with separate usage stores', () => {
    const upstream = new TestUpstream();
    let a: Instance;
    let b: Instance;

    before(async () => {
      await upstream.start();
      const body = `
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${process.pid}:${Date.now()}:keys:" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstream.url)}`;
      [a, b] = await Promise.all([spawnWithAdmin(body), spawnWithAdmin(body)]);
    });
    after(async () => {
      await Promise.all([a && stopGateway(a), b && stopGateway(b)]);
      await upstream.stop();
    });

    it('admin API: created on A works on A and B; revoked on A, B refuses it within a second', async () => {
      const created = await adminCall(a, 'POST', '/api/keys', { label: 'shared' });
      expect(await statusOf(a.url, created.key)).to.equal(200);
      const reachedB = await until(b.url, created.key, 200);
      expect(reachedB, 'creation reaches B (which has its own store) through Redis').to.be.lessThan(1000);
      expect(
        (await adminCall(b, 'GET', '/api/keys')).data.map((k: any) => k.id),
        "B's own store never had it",
      ).to.not.include(created.id);

      await adminCall(a, 'DELETE', `/api/keys/${created.id}`);
      const refusedB = await until(b.url, created.key, 401);
      console.log(
        `      (created on A: usable on B after ${reachedB} ms; revoked on A: refused on B after ${refusedB} ms)`,
      );
      expect(refusedB).to.be.lessThan(1000);
      expect(await statusOf(a.url, created.key)).to.equal(401);
    });

    it("CLI: a key revoked with A's config is refused by B within a second", async () => {
      const cli = resolve(PROJECT_ROOT, 'dist/cli/index.js');
      const config = join(a.dir, 'gateway.config.yaml');
      const { stdout } = await run(process.execPath, [cli, 'keys', 'create', '--label', 'cli', '--config', config], {
        env: { ...process.env, GATEWAY_KEY: TEST_GATEWAY_KEY },
      });
      const key = /(tg_[A-Za-z0-9_-]{43})/.exec(stdout)![1];
      const id = /Created key (\S+)/.exec(stdout)![1];
      expect(await until(b.url, key, 200)).to.be.lessThan(1000);
      await run(process.execPath, [cli, 'keys', 'revoke', id, '--config', config], {
        env: { ...process.env, GATEWAY_KEY: TEST_GATEWAY_KEY },
      });
      expect(await until(b.url, key, 401)).to.be.lessThan(1000);
      expect(await until(a.url, key, 401)).to.be.lessThan(1000);
    });
  });

  describe('budget reservations shared through Redis', () => {
    const upstream = new TestUpstream();
    after(() => upstream.stop());

    it('a process killed mid-stream: its renewed reservation outlives the lease while it runs, then lapses', async function () {
      this.timeout(30_000);
      await upstream.start();
      // 16 events, 250 ms apart: the stream stays open about 4 s.
      upstream.respondWith(() => ({
        headers: { 'content-type': 'text/event-stream' },
        body: sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse')),
        delayMs: 250,
      }));
      const body = `
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${process.pid}:${Date.now()}:lease:", reservation_lease_ms: 1000 }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }], limits: { budgets: [{ period: day, usd: "100" }] } }]
${providerBlock(upstream.url)}`;
      const [a, b] = await Promise.all([spawnWithAdmin(body), spawnWithAdmin(body)]);
      const reserved = async () => (await adminCall(b, 'GET', '/api/budgets')).data[0].reserved_usd as string;
      try {
        expect(await reserved()).to.equal('0');
        const stream = await chat(a.url, true);
        expect(stream.statusCode).to.equal(200);
        stream.body.on('error', () => undefined).resume();
        const held = await reserved();
        expect(Number(held), "B sees A's reservation").to.be.greaterThan(0);
        await sleep(1_800);
        expect(await reserved(), 'renewed while the stream is open, past the 1 s lease').to.equal(held);
        a.child.kill('SIGKILL'); // no settlement will ever come
        const killed = Date.now();
        while ((await reserved()) !== '0') {
          expect(Date.now() - killed, 'lapsed within the lease').to.be.lessThan(2_500);
          await sleep(50);
        }
        console.log(`      (reservation lapsed ${Date.now() - killed} ms after the kill; lease 1000 ms)`);
      } finally {
        a.child.kill('SIGKILL');
        await stopGateway(b);
      }
    });
  });
});

describe('when Redis hangs', () => {
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());

  it('a request pays one command time-out at most, then the circuit breaker answers at once', async function () {
    requireRedisServer(this, 'a hung Redis (the test stops a private redis-server)');
    this.timeout(20_000);
    const port = await freePort();
    const server = await startRedis(port);
    const gw = await startTestGateway(
      upstream.url,
      `limit_store: { redis_url: "redis://127.0.0.1:${port}", on_error: open, circuit_breaker_ms: 2000 }
workspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { requests_per_minute: 1000, tokens_per_minute: 10000000, concurrent_streams: 5, budgets: [{ period: day, usd: "100" }] } }]`,
    );
    const timed = async () => {
      const t0 = Date.now();
      const res = await chat(gw.url);
      await res.body.text();
      expect(res.statusCode).to.equal(200);
      return Date.now() - t0;
    };
    try {
      await timed();
      server.kill('SIGSTOP');
      const first = await timed(); // the token check waits out the 500 ms time-out; the rest fail fast
      const next = [await timed(), await timed(), await timed()];
      console.log(`      (hung Redis: first request ${first} ms, next ${next.join(', ')} ms)`);
      expect(first).to.be.within(400, 1_000);
      for (const ms of next) expect(ms).to.be.below(150);
    } finally {
      server.kill('SIGCONT');
      server.kill('SIGKILL');
      await gw.stop();
    }
  });
});

describe('when Redis is unreachable', () => {
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());

  for (const policy of ['open', 'closed'] as const) {
    it(`on_error: ${policy} ${policy === 'open' ? 'keeps serving and logs it' : 'refuses with 503 limits_unavailable'}`, async () => {
      const gw = await startTestGateway(
        upstream.url,
        `limit_store: { redis_url: "redis://127.0.0.1:1", on_error: ${policy} }\nworkspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { requests_per_minute: 100 } }]`,
      );
      try {
        const started = Date.now();
        const res = await chat(gw.url);
        const body = (await res.body.json()) as any;
        expect(Date.now() - started, 'fails fast, no hang').to.be.lessThan(3000);
        if (policy === 'open') {
          expect(res.statusCode).to.equal(200);
          expect(gw.logs.some((l) => l.includes('limit store unavailable: failing open'))).to.equal(true);
        } else {
          expect(res.statusCode).to.equal(503);
          expect(body.error.code).to.equal('limits_unavailable');
        }
      } finally {
        await gw.stop();
      }
    });
  }
});
