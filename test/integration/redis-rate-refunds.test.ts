import { expect } from 'chai';
import OpenAI from 'openai';
import { fixtureBytes } from '../helpers/fixtures';
import { startTestGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { requireRedis } from '../helpers/services';
import { sseChunks, TestUpstream } from '../helpers/upstream';

/**
 * With limits in Redis, a request that another limit refused does not keep a rate-limit token: the rate limits count
 * requests that went out. Bursts of streams from the official openai SDK against the real Redis; each stream the
 * provider answers takes about 4 s (16 events 250 ms apart), so the slots stay taken for the whole burst.
 */
describe('rate-limit tokens and refusals, limits in Redis', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let redisUrl: string;
  before(async function () {
    redisUrl = await requireRedis(this, 'rate-limit refunds in Redis');
    await upstream.start();
  });
  after(() => upstream.stop());
  beforeEach(() => {
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 250 }));
  });
  afterEach(async () => {
    await gw?.stop();
    upstream.reset();
  });

  const start = (limits: string) =>
    startTestGateway(
      upstream.url,
      `
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:refunds:${process.pid}:${Date.now()}:" }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: ${limits}
`,
    ).then((g) => (gw = g));
  const client = () => openaiClient(gw);

  /** One stream read to its end: 'ok', or the gateway's error code. */
  async function stream(c: OpenAI): Promise<string> {
    try {
      const s = await c.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 100,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of s) void chunk;
      return 'ok';
    } catch (err) {
      return String((err as { code?: string }).code);
    }
  }
  async function burst(n: number): Promise<Record<string, number>> {
    const c = client();
    const outcomes = await Promise.all(Array.from({ length: n }, () => stream(c)));
    const counts: Record<string, number> = {};
    for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
    return counts;
  }
  /**
   * Tokens left in the per-minute bucket, read from the next request's x-ratelimit-remaining (which counts that
   * request too). `sinceMs`: how long the bucket has been refilling, which bounds what it may have regained.
   */
  async function remainingAfter(
    rpm: number,
    wentOut: number,
    sinceMs: number,
  ): Promise<{ remaining: number; low: number; high: number }> {
    const { response } = await client()
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })
      .withResponse();
    const low = rpm - wentOut - 1;
    const high = Math.min(rpm - 1, low + Math.ceil(((Date.now() - sinceMs) * rpm) / 60_000));
    return { remaining: Number(response.headers.get('x-ratelimit-remaining')), low, high };
  }

  it('a burst of 100 streams over a limit of 5: 95 refused as concurrency_limited, none as rate_limited; the bucket lost only what went out', async () => {
    await start('{ requests_per_minute: 12, concurrent_streams: 5 }');
    const t0 = Date.now();
    expect(await burst(100)).to.deep.equal({ ok: 5, concurrency_limited: 95 });
    const r = await remainingAfter(12, 5, t0);
    expect(r.remaining).to.be.within(r.low, r.high);
  });

  it('streams refused by the budget give their tokens back', async () => {
    // What one stream reserves, read from a refusal against a budget of one pico-dollar; the budget then holds 3.5 of them.
    await start('{ budgets: [{ period: day, usd: "0.000000000001" }] }');
    const refusal = (await client()
      .chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 100,
        stream: true,
      })
      .then(
        () => null,
        (e: unknown) => e,
      )) as Error;
    const reservation = Number(/may cost up to \$(\d+(?:\.\d+)?)/.exec(refusal.message)![1]);
    await gw.stop();
    await start(`{ requests_per_minute: 30, budgets: [{ period: day, usd: "${(reservation * 3.5).toFixed(12)}" }] }`);
    const t0 = Date.now();
    expect(await burst(20)).to.deep.equal({ ok: 3, budget_exceeded: 17 });
    const r = await remainingAfter(30, 3, t0);
    expect(r.remaining, 'without refunds 9 would be left').to.be.within(r.low, r.high);
  });
});
