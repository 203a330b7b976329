import { join } from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { openStore } from '../../storage';
import { fixtureBytes } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, TEST_GATEWAY_KEY } from '../helpers/gateway';
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
