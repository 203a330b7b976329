import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createPluginHarness, createTestContext } from 'tollgate/testing';
import usageWebhook from '../../examples/plugins/usage-webhook';
import type { UsageSummary } from '../../examples/plugins/usage-webhook/summary';
import { OPENAI_KEY, startTestGateway, TEST_GATEWAY_KEY, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { call, chat, eventually, EXAMPLES_DIR, pipelineYaml } from './helpers';

const WEBHOOK_TOKEN = 'hook-token-PLANTED-SECRET-0005';
const PROMPT = 'PROMPT-SENTINEL never leaves the gateway';

/** A loopback receiver: records every POST; answers `failNext` of them with 503 first. */
class Receiver {
  readonly posts: { headers: IncomingHttpHeaders; raw: string; records: UsageSummary[] }[] = [];
  failNext = 0;
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.failNext > 0) {
          this.failNext--;
          res.writeHead(503).end();
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        this.posts.push({ headers: req.headers, raw, records: JSON.parse(raw).records });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks/usage`;
  }

  records(): UsageSummary[] {
    return this.posts.flatMap((p) => p.records);
  }

  find(requestId: unknown): UsageSummary | undefined {
    return this.records().find((r) => r.request_id === requestId);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

const webhookEntry = (url: string, extra = '') =>
  `- use: "${join(EXAMPLES_DIR, 'plugins/usage-webhook')}"\n  options: { url: "${url}", headers: { authorization: "Bearer \${WEBHOOK_TOKEN}" }${extra} }`;

/** Loaded from YAML after usage-recorder, exporting what a real gateway served. */
describe('examples/plugins/usage-webhook behind the gateway', () => {
  const upstream = new TestUpstream();
  const receiver = new Receiver();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    await receiver.start();
    gw = await startTestGateway(
      upstream.url,
      pipelineYaml([webhookEntry(receiver.url, ', flush_interval_ms: 20')], 'end'),
      { WEBHOOK_TOKEN },
    );
  });
  after(async () => {
    await gw?.stop();
    await receiver.stop();
    await upstream.stop();
  });

  it("POSTs each request's summary: ids, routing, tokens, the exact cost and tags", async () => {
    const r = await call(
      gw,
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] },
      {
        'x-gateway-metadata': '{"agent":"support-bot"}',
        'x-gateway-metadata-customer-id': 'acme',
      },
    );
    expect(r.status).to.equal(200);
    const s = await eventually(() => receiver.find(r.headers['x-gateway-request-id']));
    expect(s).to.deep.include({
      workspace: 'default',
      key_id: 'test',
      provider: 'openai',
      model: 'gpt-4o-mini',
      served_model: 'gpt-4o-mini',
      endpoint: 'chat.completions',
      status: 200,
      streamed: false,
      estimated: false,
      error: null,
      cost_source: 'priced',
      tags: { agent: 'support-bot', customer_id: 'acme' },
      tokens: { input: 125, output: 353, cache_read: 1024, cache_write: null, reasoning: 0 },
    });
    // The same cost the client was told in x-gateway-cost: one cost service for everyone.
    expect(s.cost_usd).to.equal(r.headers['x-gateway-cost']);
    expect(Date.parse(s.ts)).to.be.closeTo(Date.now(), 10_000);
  });

  it('summarises streams and refusals too', async () => {
    const streamed = await call(
      gw,
      '/v1/chat/completions',
      chat('gpt-4o-mini', { stream: true, stream_options: { include_usage: true } }),
    );
    const refused = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-key': 'tg_wrong' });
    expect(refused.status).to.equal(401);
    const s = await eventually(() => receiver.find(streamed.headers['x-gateway-request-id']));
    expect(s).to.deep.include({
      streamed: true,
      tokens: { input: 12, output: 12, cache_read: 0, cache_write: null, reasoning: 0 },
    });
    const f = await eventually(() => receiver.find(refused.headers['x-gateway-request-id']));
    expect(f).to.deep.include({
      status: 401,
      error: 'gateway_key_invalid',
      workspace: null,
      cost_usd: null,
      cost_source: 'no_usage',
    });
  });

  it('authenticates to the receiver with its configured header, and never sends a key or a prompt', async () => {
    await eventually(() => (receiver.posts.length > 0 ? true : undefined));
    for (const post of receiver.posts) {
      expect(post.headers.authorization).to.equal(`Bearer ${WEBHOOK_TOKEN}`);
      expect(post.headers['content-type']).to.equal('application/json');
      for (const secret of [OPENAI_KEY, TEST_GATEWAY_KEY, 'tg_wrong', PROMPT]) expect(post.raw).to.not.include(secret);
    }
    // ... and its own token, which is in its options, never reaches a log line.
    expect(gw.logs.join('\n')).to.not.include(WEBHOOK_TOKEN);
  });
});

describe('examples/plugins/usage-webhook off the request path', () => {
  const upstream = new TestUpstream();
  const receiver = new Receiver();

  before(async () => {
    await upstream.start();
    await receiver.start();
  });
  after(async () => {
    await receiver.stop();
    await upstream.stop();
  });

  it('answers clients at once while the receiver is down, then delivers everything on shutdown', async () => {
    receiver.failNext = 1_000; // down
    const gw = await startTestGateway(
      upstream.url,
      pipelineYaml([webhookEntry(receiver.url, ', flush_interval_ms: 20, batch_size: 2')], 'end'),
      { WEBHOOK_TOKEN },
    );
    const ids: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
      expect(r.status).to.equal(200);
      expect(Date.now() - started).to.be.below(1000);
      ids.push(r.headers['x-gateway-request-id']);
    }
    expect(receiver.posts).to.have.length(0);
    receiver.failNext = 0; // back up: shutdown sends what is queued
    await gw.stop();
    expect(receiver.records().map((r) => r.request_id)).to.deep.equal(ids);
    expect(gw.logs.some((l) => l.includes('usage-webhook: delivery failed, will retry'))).to.equal(true);
  });
});

/** The batching rules on their own, through the public test helpers. */
describe('examples/plugins/usage-webhook with tollgate/testing', () => {
  const receiver = new Receiver();
  before(() => receiver.start());
  after(() => receiver.stop());
  beforeEach(() => {
    receiver.posts.length = 0;
    receiver.failNext = 0;
  });

  it('sends a batch as soon as it is full, and the rest on close', async () => {
    const harness = await createPluginHarness(usageWebhook, {
      options: { url: receiver.url, batch_size: 3, flush_interval_ms: 60_000 },
    });
    const complete = (n: number) =>
      harness.complete(createTestContext({ json: chat('gpt-4o-mini'), status: 200, tags: { n: String(n) } }));
    await complete(1);
    await complete(2);
    expect(receiver.posts).to.have.length(0);
    await complete(3);
    await eventually(() => (receiver.posts.length === 1 ? true : undefined));
    expect(receiver.posts[0].records.map((r) => r.tags.n)).to.deep.equal(['1', '2', '3']);
    await complete(4);
    await harness.close();
    expect(receiver.posts.map((p) => p.records.length)).to.deep.equal([3, 1]);
  });

  it('prices the usage with the shared cost service', async () => {
    const harness = await createPluginHarness(usageWebhook, { options: { url: receiver.url, batch_size: 1 } });
    await harness.complete(
      createTestContext({ json: chat('gpt-4o-mini'), status: 200, usage: { inputTokens: 1_000_000, outputTokens: 0 } }),
    );
    await harness.close();
    expect(receiver.records()[0]).to.include({ cost_usd: '0.15', cost_source: 'priced' });
  });

  it('keeps at most max_queue summaries waiting, dropping the oldest', async () => {
    const harness = await createPluginHarness(usageWebhook, {
      options: { url: receiver.url, batch_size: 10, flush_interval_ms: 60_000, max_queue: 2 },
    });
    for (const n of [1, 2, 3])
      await harness.complete(createTestContext({ json: chat('gpt-4o-mini'), tags: { n: String(n) } }));
    await harness.close();
    expect(receiver.records().map((r) => r.tags.n)).to.deep.equal(['2', '3']);
  });

  it('refuses a missing or malformed url at start-up', async () => {
    let message = '';
    await createPluginHarness(usageWebhook, { options: { url: 'ftp://example.com' } }).catch(
      (e) => (message = e.message),
    );
    expect(message).to.equal('plugins[0] (usage-webhook): options.url: expected an http(s) URL');
  });
});
