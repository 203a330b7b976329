import { expect } from 'chai';
import { join } from 'node:path';
import { createPluginHarness, createTestContext } from 'tollgate/testing';
import { budget } from '../../plugins/budget';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { openStore } from '../../storage';
import { useGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { costsSeen, TRACE_HEADER } from './fixtures/guarantees-plugin';
import { call, chat, eventually, FIXTURES_DIR, waitForRecord } from './helpers';

describe('framework: what a plugin can rely on', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(
    upstream,
    (g) => (gw = g),
    `
plugins:
  - use: "${join(FIXTURES_DIR, 'guarantees-plugin')}"
  - use: auth
  - use: header-strip
  - use: attribution
  - use: "${join(FIXTURES_DIR, 'throwing-plugin')}"
  - use: usage-recorder
    options: { flush_interval_ms: 20 }
`,
  );

  it('a header set in onRequest reaches every answer, refusals by later plugins and by the core included', async () => {
    const answers = {
      200: await call(gw, '/v1/chat/completions', chat('gpt-4o-mini')),
      gateway_key_missing: await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-key': undefined }),
      provider_key_missing: await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { authorization: undefined }),
      plugin_error: await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), {
        'x-gateway-metadata-explode': 'beforeUpstream',
      }),
    };
    for (const [outcome, r] of Object.entries(answers)) {
      expect(outcome === '200' ? String(r.status) : r.json.error.code, outcome).to.equal(outcome);
      expect(r.headers[TRACE_HEADER], outcome).to.equal(`trace-${r.headers['x-gateway-request-id']}`);
    }
  });

  it("the cost service gives a stream's cost once its usage is known, and never keeps the unknown it gave before", async () => {
    const r = await call(gw, '/v1/chat/completions', {
      ...chat('gpt-4o-mini'),
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(r.status).to.equal(200);
    const id = String(r.headers['x-gateway-request-id']);
    const seen = await eventually(() => (costsSeen.get(id)?.onComplete !== undefined ? costsSeen.get(id) : undefined));
    // The recorded stream reports 12 prompt and 12 completion tokens; gpt-4o-mini costs $0.15 / $0.60 per 1M tokens:
    // 12 x $0.15 + 12 x $0.60 = $9 per 1M, so $0.000009 = 9,000,000 pico-USD.
    expect(seen).to.deep.equal({ onResponse: null, onStreamEvent: null, onComplete: 9_000_000n });
    expect(await waitForRecord(gw, id)).to.include({ cost_usd: '0.000009', provenance: 'measured' });
  });
});

describe('framework: budget periods follow TOKENS.Clock', () => {
  it('refuses at 23:59:30 UTC with Retry-After 30, and admits again when the clock reaches the next day', async () => {
    let now = Date.UTC(2031, 0, 1, 23, 59, 0);
    const usage = await openStore('sqlite::memory:');
    const harness = await createPluginHarness(budget, {
      config: { workspaces: [{ id: 'default', limits: { budgets: [{ period: 'day', usd: '0.001' }] } }] },
      services: { LimitStore: new MemoryLimitStore(), UsageStore: usage, Clock: { now: () => now } },
    });
    // Each answer: 12 input and 1,000 output tokens of gpt-4o-mini ($0.15 / $0.60 per 1M) = $0.0006018; its worst
    // case at admission (max_tokens 1000, input from the body size) is about $0.000604, so a second one does not fit.
    const request = () =>
      createTestContext({
        json: { model: 'gpt-4o-mini', max_tokens: 1000, messages: [] },
        usage: { inputTokens: 12, outputTokens: 1000 },
      });
    try {
      expect(await harness.exchange(request())).to.equal(undefined);
      now = Date.UTC(2031, 0, 1, 23, 59, 30);
      const refusal = await harness.exchange(request());
      expect(refusal?.code).to.equal('budget_exceeded');
      expect(refusal?.message).to.include('$0.0006018 spent');
      expect(refusal?.headers).to.include({ 'retry-after': '30' });
      now = Date.UTC(2031, 0, 2, 0, 0, 0);
      expect(await harness.exchange(request()), 'a new day, a new budget').to.equal(undefined);
    } finally {
      await harness.close();
      await usage.close();
    }
  });
});
