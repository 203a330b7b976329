import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { request } from 'undici';
import { adminGet, waitForRecords } from '../helpers/admin';
import { fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import {
  ANTHROPIC_KEY,
  OPENAI_KEY,
  startTestGateway,
  TEST_GATEWAY_KEY,
  type TestGateway,
  openaiClient,
} from '../helpers/gateway';
import { spawnOneWorkspace, stopGateway } from '../helpers/process';
import { samplesOf, scrape, total, type Sample } from '../helpers/prometheus';
import { recordedResponder, TestUpstream } from '../helpers/upstream';
import { waitFor, sleep } from '../helpers/wait';
import { requireRedis } from '../helpers/services';

/** The per-million-token prices of a catalog model, read from the committed catalog file (not from the pricing code). */
function catalogPrice(provider: string, model: string): { input: number; output: number; cache_read: number } {
  const catalog = JSON.parse(readFileSync(join(PROJECT_ROOT, 'pricing/catalog.json'), 'utf8')) as { models: any[] };
  const m = catalog.models.find((x) => x.provider === provider && x.model === model);
  return { input: Number(m.input), output: Number(m.output), cache_read: Number(m.cache_read) };
}

/** The change of each metric between two scrapes, for the samples whose labels include `match`. */
const delta = (before: Sample[], after: Sample[], name: string, match: Record<string, string> = {}) =>
  total(after, name, match) - total(before, name, match);

const LIMITED_KEY = 'tg_test_key_for_the_limited_workspace_00000001';

describe('Prometheus metrics (GET /metrics on the admin port)', () => {
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() => upstream.reset());

  describe('on a gateway with tag labels and a rate-limited workspace', () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(
        upstream.url,
        `
metrics: { tag_keys: [feature] }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
  - id: limited
    keys: [{ id: lim, key: "\${LIMITED_KEY}" }]
    limits: { requests_per_minute: 1 }
`,
        { LIMITED_KEY },
      );
    });
    after(() => gw.stop());

    const openai = (headers: Record<string, string> = {}, key = gw.key) =>
      new OpenAI({
        apiKey: OPENAI_KEY,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: { 'X-Gateway-Key': key, ...headers },
      });

    it('requests, tokens and cost move by exactly what was sent and recorded; upstream time is not gateway overhead', async () => {
      // Every upstream answer waits 40 ms before its headers: upstream time, which the overhead must not include.
      upstream.respondWith((req, body) => {
        const reply = recordedResponder(req, body);
        return reply && { ...reply, headerDelayMs: 40 };
      });
      const before = await scrape(gw.adminUrl!);
      const search = openai({ 'X-Gateway-Metadata-Feature': 'search' });
      for (let i = 0; i < 3; i++)
        await search.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      for (let i = 0; i < 2; i++) {
        const stream = await search.chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const _chunk of stream);
      }
      const anthropic = new Anthropic({
        apiKey: ANTHROPIC_KEY,
        baseURL: gw.url,
        maxRetries: 0,
        defaultHeaders: { 'X-Gateway-Key': gw.key },
      });
      await anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const records = await waitForRecords(gw, 6);
      const after = await scrape(gw.adminUrl!);

      expect(
        delta(before, after, 'tollgate_requests_total', {
          provider: 'openai',
          model: 'gpt-4o-mini',
          endpoint: 'chat.completions',
          status_class: '2xx',
        }),
      ).to.equal(5);
      expect(
        delta(before, after, 'tollgate_requests_total', {
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          endpoint: 'messages',
          status_class: '2xx',
        }),
      ).to.equal(1);
      expect(delta(before, after, 'tollgate_requests_total')).to.equal(6);

      // Tokens: the recorded usage of the fixtures, by type (OpenAI's prompt_tokens include the cached ones).
      const json = fixtureJson('openai/chat_completion_cached_tokens.json').usage;
      const streamed = { prompt_tokens: 12, completion_tokens: 12 }; // the last event of openai/chat_stream_with_usage.sse
      const messages = fixtureJson('anthropic/messages_basic.json').usage;
      const openaiTokens = { provider: 'openai', model: 'gpt-4o-mini', workspace: 'default', tag_feature: 'search' };
      const cached = json.prompt_tokens_details.cached_tokens;
      expect(delta(before, after, 'tollgate_tokens_total', { ...openaiTokens, type: 'input' })).to.equal(
        3 * (json.prompt_tokens - cached) + 2 * streamed.prompt_tokens,
      );
      expect(delta(before, after, 'tollgate_tokens_total', { ...openaiTokens, type: 'cache_read' })).to.equal(
        3 * cached,
      );
      expect(delta(before, after, 'tollgate_tokens_total', { ...openaiTokens, type: 'output' })).to.equal(
        3 * json.completion_tokens + 2 * streamed.completion_tokens,
      );
      const anthropicTokens = {
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        workspace: 'default',
        tag_feature: '(untagged)',
      };
      expect(delta(before, after, 'tollgate_tokens_total', { ...anthropicTokens, type: 'input' })).to.equal(
        messages.input_tokens,
      );
      expect(delta(before, after, 'tollgate_tokens_total', { ...anthropicTokens, type: 'output' })).to.equal(
        messages.output_tokens,
      );

      // Cost: the fixtures' usage at the catalog's prices, and the same sum as the records the store kept.
      const p = catalogPrice('openai', 'gpt-4o-mini');
      const perJson =
        ((json.prompt_tokens - cached) * p.input + cached * p.cache_read + json.completion_tokens * p.output) / 1e6;
      const perStream = (streamed.prompt_tokens * p.input + streamed.completion_tokens * p.output) / 1e6;
      const openaiCost = delta(before, after, 'tollgate_cost_usd_total', { provider: 'openai' });
      expect(openaiCost).to.be.closeTo(3 * perJson + 2 * perStream, 1e-12);
      const recorded = records.reduce((sum, r) => sum + Number(r.cost_usd), 0);
      expect(delta(before, after, 'tollgate_cost_usd_total')).to.be.closeTo(recorded, 1e-12);

      // Histograms: one observation per proxied request; the upstream's 40 ms are in the TTFB, not in the overhead.
      expect(delta(before, after, 'tollgate_upstream_ttfb_seconds_count')).to.equal(6);
      expect(
        delta(before, after, 'tollgate_gateway_overhead_seconds_count', { endpoint: 'chat.completions' }),
      ).to.equal(5);
      expect(delta(before, after, 'tollgate_upstream_ttfb_seconds_sum')).to.be.at.least(6 * 0.04);
      expect(delta(before, after, 'tollgate_gateway_overhead_seconds_sum')).to.be.below(6 * 0.04);
      expect(
        delta(before, after, 'tollgate_upstream_ttfb_seconds_bucket', { provider: 'openai', le: '0.05' }),
      ).to.be.at.most(5);
      expect(
        delta(before, after, 'tollgate_upstream_ttfb_seconds_bucket', { provider: 'openai', le: '+Inf' }),
      ).to.equal(5);
    });

    it('counts limit refusals and gateway errors by code', async () => {
      const before = await scrape(gw.adminUrl!);
      const limited = openai({}, LIMITED_KEY);
      await limited.chat.completions.create({ model: 'gpt-4o-mini', messages: [] });
      const refused = await limited.chat.completions.create({ model: 'gpt-4o-mini', messages: [] }).then(
        () => undefined,
        (err: InstanceType<typeof OpenAI.APIError>) => err,
      );
      expect(refused?.status).to.equal(429);
      const unknownKey = await openai({}, 'tg_not_a_key')
        .chat.completions.create({ model: 'gpt-4o-mini', messages: [] })
        .catch((err) => err);
      expect(unknownKey.status).to.equal(401);
      await waitFor(
        async () => delta(before, await scrape(gw.adminUrl!), 'tollgate_requests_total') === 3,
        5000,
        'three requests counted',
      );
      const after = await scrape(gw.adminUrl!);
      expect(delta(before, after, 'tollgate_limit_refusals_total', { code: 'rate_limited' })).to.equal(1);
      expect(delta(before, after, 'tollgate_limit_refusals_total')).to.equal(1);
      expect(delta(before, after, 'tollgate_errors_total', { code: 'rate_limited' })).to.equal(1);
      expect(delta(before, after, 'tollgate_errors_total', { code: 'gateway_key_invalid' })).to.equal(1);
      expect(delta(before, after, 'tollgate_requests_total', { status_class: '4xx' })).to.equal(2);
      expect(
        delta(before, after, 'tollgate_requests_total', { provider: 'none', status_class: '4xx' }),
        'refused before routing',
      ).to.equal(1);
    });

    it('asks for the admin token or metrics.token; the scrape token opens nothing else', async () => {
      for (const token of [null, 'wrong-token-0000000000']) {
        const res = await request(`${gw.adminUrl}/metrics`, {
          headers: token ? { authorization: `Bearer ${token}` } : {},
        });
        expect(res.statusCode).to.equal(401);
        expect(((await res.body.json()) as any).error.code).to.equal('admin_token_invalid');
      }
      const scraper = 'scrape-only-token-0123456789abcdef';
      const withToken = await startTestGateway(upstream.url, `metrics: { token: "${scraper}" }`);
      const open = await startTestGateway(upstream.url, 'metrics: { auth: none }');
      try {
        expect(total(await scrape(withToken.adminUrl!, scraper), 'tollgate_store_queue_depth')).to.equal(0);
        expect(
          total(await scrape(withToken.adminUrl!), 'tollgate_store_queue_depth'),
          'the admin token works too',
        ).to.equal(0);
        const elsewhere = await request(`${withToken.adminUrl}/api/usage`, {
          headers: { authorization: `Bearer ${scraper}` },
        });
        expect(elsewhere.statusCode).to.equal(401);
        await elsewhere.body.text();
        expect(total(await scrape(open.adminUrl!, null), 'tollgate_store_queue_depth')).to.equal(0);
      } finally {
        await withToken.stop();
        await open.stop();
      }
    });
  });

  it('bounds its labels: unpriced models and models beyond models_max are "other", tag values neither configured nor spending too', async () => {
    const gw = await startTestGateway(
      upstream.url,
      'metrics: { tag_keys: [feature], tag_values_max: 2, tag_values: { feature: [triage] }, models_max: 1 }',
    );
    try {
      const output = fixtureJson('openai/chat_completion_cached_tokens.json').usage.completion_tokens;
      const send = (feature: string | undefined, model: string) =>
        new OpenAI({
          apiKey: OPENAI_KEY,
          baseURL: `${gw.url}/v1`,
          maxRetries: 0,
          defaultHeaders: {
            'X-Gateway-Key': gw.key,
            'X-Gateway-Provider': 'openai',
            ...(feature ? { 'X-Gateway-Metadata-Feature': feature } : {}),
          },
        }).chat.completions.create({ model, messages: [] });
      await send('search', 'gpt-4o-mini'); // the one model models_max: 1 keeps; the value with the most spend
      await send(undefined, 'gpt-4o-mini'); // no tag: "(untagged)", which takes none of tag_values_max
      await send('triage', 'gpt-4o'); // priced, but past models_max; a configured value
      await send('summaries', 'my-own-finetune'); // no price: a value without known spend earns no label
      await waitForRecords(gw, 4);
      const samples = await scrape(gw.adminUrl!);
      const requests = (model: string) => total(samples, 'tollgate_requests_total', { provider: 'openai', model });
      expect([requests('gpt-4o-mini'), requests('other')]).to.deep.equal([2, 2]);
      const outputOf = (match: Record<string, string>) =>
        total(samples, 'tollgate_tokens_total', { type: 'output', ...match });
      expect(outputOf({ model: 'gpt-4o-mini', tag_feature: 'search' })).to.equal(output);
      expect(outputOf({ model: 'gpt-4o-mini', tag_feature: '(untagged)' })).to.equal(output);
      expect(outputOf({ model: 'other', tag_feature: 'triage' })).to.equal(output);
      expect(outputOf({ model: 'other', tag_feature: 'other' })).to.equal(output);
      expect(samples.some((s) => s.labels.model === 'gpt-4o' || s.labels.model === 'my-own-finetune')).to.equal(false);
      expect(samples.some((s) => s.labels.tag_feature === 'summaries')).to.equal(false);
      // The unpriced model's cost is unknown: counted apart, never as $0 in the cost counter.
      expect(total(samples, 'tollgate_unpriced_requests_total', { provider: 'openai', workspace: 'default' })).to.equal(
        1,
      );
      expect(samplesOf(samples, 'tollgate_cost_usd_total', { model: 'other', tag_feature: 'other' })).to.deep.equal([]);
    } finally {
      await gw.stop();
    }
  });

  it('store queue depth and spill bytes follow the write queue while the store is locked, and go back to 0', async function () {
    this.timeout(60_000);
    const gw = await startTestGateway(
      upstream.url,
      `
plugins:
  - use: auth
  - use: header-strip
  - use: usage-recorder
    options: { flush_interval_ms: 20, batch_size: 1, max_in_memory: 2, spill_path: "./spill.jsonl" }
`,
    );
    const spill = join(gw.dataDir, 'spill.jsonl');
    const lock = lockSqlite(join(gw.dataDir, 'tollgate.db'));
    try {
      await lock.held;
      const openai = openaiClient(gw);
      for (let i = 0; i < 6; i++) await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [] });
      // Nothing can be written: each record waits in memory (at most 2) or in the spill file. The first write fails
      // once SQLite's busy wait on the writer thread gives up.
      let samples: Sample[] = [];
      await waitFor(
        async () => {
          samples = await scrape(gw.adminUrl!);
          const bytes = statSync(spill, { throwIfNoEntry: false })?.size ?? 0;
          return (
            bytes > 0 &&
            total(samples, 'tollgate_store_spill_bytes') === bytes &&
            total(samples, 'tollgate_store_write_failures_total') > 0
          );
        },
        15_000,
        'spill bytes equal to the spill file on disk, and a failed write',
      );
      const spilled = readFileSync(spill, 'utf8').split('\n').filter(Boolean).length;
      expect(total(samples, 'tollgate_store_queue_depth') + spilled).to.equal(6);
      expect(total(samples, 'tollgate_store_queue_depth')).to.be.within(1, 2);
      lock.release();
      await waitFor(
        async () => {
          const s = await scrape(gw.adminUrl!);
          return total(s, 'tollgate_store_spill_bytes') === 0 && total(s, 'tollgate_store_queue_depth') === 0;
        },
        30_000,
        'queue and spill drained',
      );
      expect((await adminGet(gw, '/api/usage')).total.requests).to.equal(6);
      expect(total(await scrape(gw.adminUrl!), 'tollgate_store_quarantined_records_total')).to.equal(0);
    } finally {
      lock.release();
      await gw.stop();
    }
  });

  it('tollgate_redis_up: 0 while Redis cannot be reached, 1 when it answers', async function () {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const down = await startTestGateway(upstream.url, `limit_store: { redis_url: "redis://127.0.0.1:${port}" }`);
    try {
      expect(total(await scrape(down.adminUrl!), 'tollgate_redis_up')).to.equal(0);
      expect((await scrape(down.adminUrl!)).filter((s) => s.name === 'tollgate_redis_up')).to.have.length(1);
    } finally {
      await down.stop();
    }
    const redisUrl = await requireRedis(this, 'tollgate_redis_up once Redis answers (second half)');
    const up = await startTestGateway(
      upstream.url,
      `limit_store: { redis_url: "${redisUrl}", key_prefix: "tg-metrics-${process.pid}:" }`,
    );
    try {
      await waitFor(async () => total(await scrape(up.adminUrl!), 'tollgate_redis_up') === 1, 5000, 'Redis connected');
    } finally {
      await up.stop();
    }
  });

  it('a multi-core gateway sums its workers: every scrape, whichever worker answers, counts every request', async function () {
    this.timeout(60_000);
    const gw = await spawnOneWorkspace(upstream.url, 'workers: 2');
    try {
      for (let i = 0; i < 600 && !gw.stderr().includes('2 worker processes serve'); i++) await sleep(50);
      expect(gw.adminUrl).to.be.a('string');
      for (let i = 0; i < 20; i++) expect(await postOnNewConnection(gw.url)).to.equal(200);
      await waitFor(
        async () => total(await scrape(gw.adminUrl!), 'tollgate_requests_total') === 20,
        10_000,
        'the 20 requests counted',
      );
      // Each scrape on a connection of its own: the cluster hands them to the workers in turn.
      for (let i = 0; i < 6; i++) {
        const samples = await scrape(gw.adminUrl!);
        expect(
          total(samples, 'tollgate_requests_total', { provider: 'openai', status_class: '2xx' }),
          `scrape ${i}`,
        ).to.equal(20);
        expect(total(samples, 'tollgate_tokens_total', { type: 'output' }), `scrape ${i}`).to.equal(
          20 * fixtureJson('openai/chat_completion_cached_tokens.json').usage.completion_tokens,
        );
      }
    } finally {
      await stopGateway(gw);
    }
  });
});

/** One chat request on a connection of its own (so the cluster's round robin spreads them over the workers). */
function postOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/v1/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': TEST_GATEWAY_KEY,
          authorization: `Bearer ${OPENAI_KEY}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'gpt-4o-mini', messages: [] }));
  });
}

/** Holds SQLite's write lock from another process until release(): every write of the gateway fails meanwhile. */
function lockSqlite(dbPath: string): { held: Promise<void>; release: () => void } {
  const script = `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(dbPath)});
db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
process.stdin.on('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const held = new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  let released = false;
  return {
    held,
    release: () => {
      if (released) return;
      released = true;
      child.stdin!.write('go\n');
    },
  };
}
