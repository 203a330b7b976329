import { statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { openStore } from '../../storage';
import { fixtureBytes, PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, openaiClient, providerBlock, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { spawnGateway, type GatewayProcess } from '../helpers/process';
import { sseChunks, TestUpstream } from '../helpers/upstream';

/** The real `tollgate start` process: SIGTERM lets in-flight streams finish and flushes every usage record. */
describe('tollgate start: graceful shutdown on SIGTERM', () => {
  const upstream = new TestUpstream();
  let gw: GatewayProcess;

  before(async () => {
    await upstream.start();
    gw = await spawnGateway(`
server: { host: 127.0.0.1, port: 0 }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstream.url)}
plugins:
  - use: usage-recorder
    options: { flush_interval_ms: 60000, batch_size: 10000 }
`);
  });
  after(() => upstream.stop());

  it('finishes the open stream, writes every record, exits 0', async () => {
    const headers = {
      'content-type': 'application/json',
      'x-gateway-key': TEST_GATEWAY_KEY,
      authorization: `Bearer ${OPENAI_KEY}`,
    };
    // 20 quick requests: their records sit in the queue (flush interval 60 s), so only shutdown can write them.
    for (let i = 0; i < 20; i++) {
      const r = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      });
      await r.body.text();
    }
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 30 }));
    const stream = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [],
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    gw.child.kill('SIGTERM');
    const body = Buffer.from(await stream.body.arrayBuffer());
    expect(body.equals(Buffer.concat(events)), 'the stream was cut by the shutdown').to.equal(true);
    expect(await gw.exited).to.equal(0);

    const store = await openStore(`sqlite:${join(gw.dir, 'tollgate.db')}`);
    try {
      const [total] = await store.queryUsage({ from: 0, to: Date.now() + 1000, groupBy: [] });
      expect(total.requests).to.equal(21);
      expect(total.partialCount).to.equal(0);
    } finally {
      await store.close();
    }
  });
});

/**
 * `npm start` as the README runs it: an unchanged tree starts from its build (the prestart compiles only when a
 * source is newer than dist/build-info.json), and a signal to the PID npm start gave reaches the gateway, which
 * drains and exits, so a supervisor that signals that PID stops it.
 */
describe('npm start: an unchanged build, stopped through its PID', () => {
  const upstream = new TestUpstream();
  let gw: GatewayProcess;
  const buildInfo = join(PROJECT_ROOT, 'dist', 'build-info.json');
  let builtAt: number;

  before(async function () {
    this.timeout(180_000); // were the tree stale, the build would run first: the test then says so
    await upstream.start();
    builtAt = statSync(buildInfo).mtimeMs;
    gw = await spawnGateway(
      `
server: { host: 127.0.0.1, port: 0 }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstream.url)}
`,
      {},
      'npm start',
    );
  });
  after(() => upstream.stop());

  it('starts without compiling, serves, and exits 0 on SIGTERM to npm', async () => {
    expect(statSync(buildInfo).mtimeMs, 'npm start rebuilt an unchanged tree').to.equal(builtAt);
    expect(gw.output().join('\n')).to.not.match(/> tollgate@\S+ build/);
    upstream.respondWith(() => ({
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/chat_completion_cached_tokens.json'),
    }));
    const answer = await openaiClient({ url: gw.url, key: TEST_GATEWAY_KEY }).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.usage?.total_tokens).to.be.greaterThan(0);

    gw.child.kill('SIGTERM');
    expect(await gw.exited).to.equal(0);
    expect(gw.output().join('\n')).to.include('shutting down');
    const refused = await request(`${gw.url}/healthz`).then(
      () => false,
      () => true,
    );
    expect(refused, 'the gateway still answers after npm start was signalled').to.equal(true);
  });
});
