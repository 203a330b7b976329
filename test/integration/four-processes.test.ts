import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { request } from 'undici';
import { fixtureBytes } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, TEST_ADMIN_TOKEN } from '../helpers/gateway';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/process';
import { requirePostgres, requireRedis } from '../helpers/services';
import { sseChunks, TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

/**
 * Four gateway processes sharing one Redis (limits, slots, budgets, keys) and one PostgreSQL store, under a burst
 * spread over all four at once: each limit holds as one limit (no 4x overshoot), and a key revoked on one process
 * is refused by every process within a second. Each scenario has a workspace of its own, so none uses up another's.
 */
const KEYS = {
  RATE_KEY: `tg_four_rate_${randomBytes(12).toString('hex')}`,
  STREAM_KEY: `tg_four_stream_${randomBytes(12).toString('hex')}`,
  BUDGET_KEY: `tg_four_budget_${randomBytes(12).toString('hex')}`,
};
const PER_MINUTE = 40;
const STREAMS = 4;
/** tts-1 bills characters: $15 per 1M, so 30 characters cost $0.00045, reserved exactly; 22 fit $0.01. */
const BUDGET_USD = '0.01';
const SPEECH_INPUT = 'x'.repeat(30);
const SPEECH_FITS = 22;
const SPEECH_COST_PICO = 450_000_000n;

const TEXT = 'Four processes.';
const post = (url: string, path: string, key: string, body: object) =>
  request(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': key, authorization: `Bearer ${OPENAI_KEY}` },
    body: JSON.stringify(body),
  });
const chat = (url: string, key: string, stream = false) =>
  post(url, '/v1/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: TEXT }], stream });

/** Sends `count` requests at once, round-robin over the processes; answers their statuses. */
async function burst(urls: string[], count: number, send: (url: string) => ReturnType<typeof post>): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await send(urls[i % urls.length]);
      await res.body.text();
      return res.statusCode;
    }),
  );
}

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});

describe('four gateway processes sharing Redis and PostgreSQL: limits hold as one, revocations reach all', function () {
  this.timeout(120_000);
  const upstream = new TestUpstream();
  const schema = `tollgate_four_${process.pid}_${Date.now()}`;
  let databaseUrl: string;
  let processes: GatewayProcess[] = [];
  let urls: string[] = [];

  before(async function () {
    databaseUrl = await requirePostgres(this, 'four gateway processes');
    const redisUrl = await requireRedis(this, 'four gateway processes');
    await upstream.start();
    const yaml = `
server: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0, token: "${TEST_ADMIN_TOKEN}" }
storage: { url: "${databaseUrl}", schema: "${schema}" }
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${schema}:" }
# Each process reads the budget's spend from the store before its first admission; on a loaded machine that read
# may take longer than the default wait, and this test is about overshoot, not about that wait.
budgets: { spend_read_wait_ms: 15000 }
workspaces:
  - id: rate
    keys: [{ id: rate, key: "\${RATE_KEY}" }]
    limits: { requests_per_minute: ${PER_MINUTE} }
  - id: streams
    keys: [{ id: streams, key: "\${STREAM_KEY}" }]
    limits: { concurrent_streams: ${STREAMS} }
  - id: budget
    keys: [{ id: budget, key: "\${BUDGET_KEY}" }]
    limits: { budgets: [{ period: day, usd: "${BUDGET_USD}" }] }
${providerBlock(upstream.url)}`;
    // The first one migrates the store; the other three then start at once.
    const first = await spawnGateway(yaml, KEYS);
    processes = [first, ...(await Promise.all([1, 2, 3].map(() => spawnGateway(yaml, KEYS))))];
    urls = processes.map((p) => p.url);
  });
  after(async () => {
    await Promise.all(processes.map((p) => stopGateway(p)));
    await upstream.stop();
    if (databaseUrl) {
      const pg = new Client({ connectionString: databaseUrl });
      await pg.connect();
      await pg.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pg.end();
    }
  });
  beforeEach(() => upstream.reset());

  it(`requests_per_minute ${PER_MINUTE}: of 160 requests sent at once to the four, ${PER_MINUTE} pass (plus what the bucket refilled meanwhile)`, async () => {
    const started = Date.now();
    const statuses = await burst(urls, 160, (url) => chat(url, KEYS.RATE_KEY));
    const refilled = Math.floor(((Date.now() - started) * PER_MINUTE) / 60_000);
    const t = tally(statuses);
    expect(t[200] ?? 0, JSON.stringify(t)).to.be.within(PER_MINUTE, PER_MINUTE + refilled);
    expect((t[200] ?? 0) + (t[429] ?? 0), JSON.stringify(t)).to.equal(160);
    expect(upstream.received.length).to.equal(t[200]);
  });

  it(`concurrent_streams ${STREAMS}: of 12 streams opened at once on the four, ${STREAMS} are admitted; their slots come back when they end`, async () => {
    let release!: () => void;
    const held = new Promise((r) => (release = () => r(undefined)));
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, until: held }));
    // The upstream holds the admitted streams' answers until every refusal has come back.
    const statuses: number[] = [];
    const opened = Array.from({ length: 12 }, (_, i) =>
      chat(urls[i % 4], KEYS.STREAM_KEY, true).then(async (res) => {
        statuses.push(res.statusCode);
        await res.body.text();
      }),
    );
    await waitFor(
      () => statuses.length === 12 - STREAMS && upstream.received.length === STREAMS,
      10_000,
      'the refusals',
    );
    expect(statuses.every((s) => s === 429)).to.equal(true);
    release();
    await Promise.all(opened);
    expect(tally(statuses), JSON.stringify(statuses)).to.deep.equal({ 200: STREAMS, 429: 12 - STREAMS });
    // Slots are released as each stream ends, on whichever process held it (a Redis round trip after the last byte
    // went out, so a client may see its stream end a moment before): a new round is admitted again.
    await waitFor(
      async () => (await burst(urls, STREAMS, (url) => chat(url, KEYS.STREAM_KEY, true))).every((s) => s === 200),
      2000,
      'a new round of streams admitted',
    );
  });

  it(`a $${BUDGET_USD} daily budget: of 80 tts-1 requests at once, the ${SPEECH_FITS} that fit are admitted and the store shows their exact spend`, async () => {
    const statuses = await burst(urls, 80, (url) =>
      post(url, '/v1/audio/speech', KEYS.BUDGET_KEY, { model: 'tts-1', voice: 'alloy', input: SPEECH_INPUT }),
    );
    expect(tally(statuses)).to.deep.equal({ 200: SPEECH_FITS, 429: 80 - SPEECH_FITS });
    // Every process writes its records to the one store; the budget's spend there is what was admitted.
    const admin = processes[0].adminUrl!;
    let spent: string | undefined; // pico-USD
    await waitFor(
      async () => {
        const res = await request(`${admin}/api/usage?filter[workspace]=budget`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        const body = (await res.body.json()) as any;
        spent = body.total?.cost_pico;
        return body.total?.requests === 80;
      },
      10_000,
      'the 80 budget records in the shared store',
    );
    expect(spent).to.equal(String(BigInt(SPEECH_FITS) * SPEECH_COST_PICO));
  });

  it('a key created on one process works on all four; revoked there, every process refuses it within a second', async () => {
    const admin = (method: 'POST' | 'DELETE', path: string, body?: object) =>
      request(`${processes[0].adminUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body && JSON.stringify(body),
      }).then((r) => r.body.json() as Promise<any>);
    const created = await admin('POST', '/api/keys', { workspace: 'streams', label: 'four processes' });
    const statusOn = async (url: string) => {
      const res = await post(url, '/v1/embeddings', created.key, { model: 'text-embedding-3-small', input: 'x' });
      await res.body.text();
      return res.statusCode;
    };
    for (const url of urls) await waitFor(async () => (await statusOn(url)) === 200, 5000, `the new key on ${url}`);
    await admin('DELETE', `/api/keys/${created.id}`);
    const revokedAt = Date.now();
    const refusedAfter = await Promise.all(
      urls.map(async (url) => {
        await waitFor(async () => (await statusOn(url)) === 401, 5000, `the revoked key refused on ${url}`);
        return Date.now() - revokedAt;
      }),
    );
    expect(Math.max(...refusedAfter), `ms until each process refused it: ${refusedAfter.join(', ')}`).to.be.below(1000);
  });
});
