import { expect } from 'chai';
import { gatewayConfigSchema } from '../../config/schema';
import { GatewayError } from '../../core/errors';
import { captureLogs, createPluginHarness, createTestContext, type PluginHarness } from '../../testing';
import type { Usage } from '../../core/usage';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { rateLimit } from '../../plugins/rate-limit';
import { failingLimitStore } from '../helpers/failing-limit-store';

/** The rate-limit plugin as the gateway builds it, over an in-memory limit store, for one workspace's limits. */
async function rateLimited(limits: Record<string, unknown>, store = new MemoryLimitStore()) {
  const config = gatewayConfigSchema.parse({ workspaces: [{ id: 'default', limits }] });
  const { logger, lines } = captureLogs('warn');
  const harness = await createPluginHarness(rateLimit, {
    services: { Config: config, LimitStore: store, Logger: logger },
  });
  return { harness, store, lines };
}

/** What a request's own log holds: a plugin that throws in onComplete is logged there, not passed on. */
const requestLog = captureLogs('warn');

/** One request through the plugin: the refusal (or undefined) and the headers the client gets. */
async function send(
  harness: PluginHarness,
  tags: Record<string, string> = {},
  answer: { usage?: Usage; error?: GatewayError; refusedLater?: GatewayError; workspace?: string } = {},
) {
  const ctx = createTestContext({ model: 'gpt-4o-mini', tags, workspace: answer.workspace, log: requestLog.logger });
  let refusal: GatewayError | undefined;
  try {
    await harness.run('beforeUpstream', ctx);
  } catch (err) {
    refusal = err as GatewayError;
  }
  // As in the proxy: a request this plugin let through goes upstream unless a later plugin refused it.
  ctx.sentUpstream = !refusal && !answer.refusedLater;
  ctx.error = refusal ?? answer.refusedLater ?? answer.error;
  ctx.usage = refusal ? undefined : answer.usage;
  await harness.complete(ctx);
  return { refusal, headers: { ...ctx.responseHeaders } };
}

describe('rate-limit plugin', () => {
  beforeEach(() => requestLog.lines.splice(0));
  afterEach(() => expect(requestLog.lines, 'nothing failed inside the plugin').to.deep.equal([]));

  it('is named rate-limit', async () => {
    expect(rateLimit.name).to.equal('rate-limit');
    expect((await rateLimited({})).harness.plugin.name).to.equal('rate-limit');
  });
  it('requests_per_minute: a burst of the limit passes, with the x-ratelimit headers counting down; the next is refused', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 2 });
    // 2 a minute refill one token every 30 s: after one take the bucket is full again in 30 s, after two in 60 s.
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '30',
    });
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
    const { refusal } = await send(harness);
    expect(refusal?.code).to.equal('rate_limited');
    expect(refusal?.status).to.equal(429);
    expect(refusal?.message).to.equal(
      'Rate limit reached: 2 requests per minute for workspace default. Retry after 30 s.',
    );
    expect(refusal?.headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
      'retry-after': '30',
    });
    await store.close();
  });

  it('requests_per_second on top: the headers describe the tighter bucket, and the refusal names it', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 100, requests_per_second: 2 });
    // per second: 2 a second refill one token every 500 ms (reset rounds up to 1 s); per minute: 99 left.
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '1',
    });
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '1',
    });
    const { refusal } = await send(harness);
    expect(refusal?.message).to.equal(
      'Rate limit reached: 2 requests per second for workspace default. Retry after 1 s.',
    );
    expect(refusal?.headers['retry-after']).to.equal('1');
    await store.close();
  });

  it('per tag value: each customer has its own bucket, named in the refusal', async () => {
    const { harness, store } = await rateLimited({ per_tag: { customer_id: { requests_per_minute: 1 } } });
    expect((await send(harness, { customer_id: 'acme' })).refusal).to.equal(undefined);
    const { refusal } = await send(harness, { customer_id: 'acme' });
    expect(refusal?.message).to.equal(
      'Rate limit reached: 1 requests per minute for customer_id=acme. Retry after 60 s.',
    );
    expect((await send(harness, { customer_id: 'globex' })).refusal).to.equal(undefined);
    // a request without the tag falls under no per-tag limit, and there is no workspace limit
    const untagged = await send(harness);
    expect(untagged.refusal).to.equal(undefined);
    expect(untagged.headers).to.deep.equal({});
    await store.close();
  });

  it('workspace and tag limits together: the refusal names only the bucket that is empty', async () => {
    const { harness, store } = await rateLimited({
      requests_per_minute: 10,
      per_tag: { customer_id: { requests_per_minute: 1 } },
    });
    expect((await send(harness, { customer_id: 'acme' })).headers).to.deep.equal({
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
    const { refusal } = await send(harness, { customer_id: 'acme' });
    expect(refusal?.message).to.equal(
      'Rate limit reached: 1 requests per minute for customer_id=acme. Retry after 60 s.',
    );
    // the refused request took nothing from the workspace bucket: 9 of 10 left after the first, 8 after the next
    expect((await send(harness, { customer_id: 'globex' })).headers).to.deep.equal({
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
    expect((await store.take([{ key: 'rpm:ws:default', limit: 10, windowMs: 60_000 }])).buckets[0].remaining).to.equal(
      7,
    );
    await store.close();
  });

  it('tokens_per_minute: counts input, output and cache tokens of completed requests, refused once the minute holds the limit', async () => {
    const { harness, store } = await rateLimited({ tokens_per_minute: 100 });
    const usage = {
      inputTokens: 50,
      outputTokens: 30,
      cacheReadTokens: 10,
      cacheWriteTokens: 5,
      cacheWrite1hTokens: 4,
      reasoningTokens: 20,
    };
    expect((await send(harness, {}, { usage })).refusal).to.equal(undefined);
    // 50 + 30 + 10 + 5 + 4 = 99: reasoning is inside output and not counted twice
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(99);
    expect((await send(harness, {}, { usage: { outputTokens: 1 } })).refusal).to.equal(undefined);
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(100);
    const { refusal } = await send(harness);
    expect(refusal?.code).to.equal('rate_limited');
    const wait = refusal!.headers['retry-after'];
    expect(Number(wait)).to.be.within(1, 60);
    expect(refusal?.message).to.equal(
      `Token rate limit reached for workspace default: 100 of 100 tokens per minute used. Retry after ${wait} s.`,
    );
    // no rate header: only a token limit is set
    expect((await send(harness)).headers).to.deep.equal({});
    await store.close();
  });

  it("tokens_per_minute per tag value only counts that value's requests", async () => {
    const { harness, store } = await rateLimited({
      requests_per_minute: 100,
      per_tag: { customer_id: { tokens_per_minute: 10 } },
    });
    await send(harness, { customer_id: 'acme' }, { usage: { inputTokens: 10 } });
    expect((await send(harness, { customer_id: 'acme' })).refusal?.message).to.match(
      /^Token rate limit reached for customer_id=acme: 10 of 10 tokens per minute used\./,
    );
    expect((await send(harness, { customer_id: 'globex' })).refusal).to.equal(undefined);
    expect(await store.windowTotal('tpm:ws:default:tag:customer_id=acme', 60_000)).to.equal(10);
    expect(await store.windowTotal('tpm:ws:default:tag:customer_id=globex', 60_000)).to.equal(0);
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(0); // the workspace has no token limit of its own
    await store.close();
  });

  it('a request with no usage, or zero tokens, adds nothing', async () => {
    const { harness, store } = await rateLimited({ tokens_per_minute: 5 });
    await send(harness);
    await send(harness, {}, { usage: { inputTokens: 0, outputTokens: 0 } });
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(0);
    await store.close();
  });

  for (const code of ['concurrency_limited', 'budget_exceeded'] as const) {
    it(`a request the ${code === 'concurrency_limited' ? 'concurrency' : 'budget'} limit refused after this one gets its token back`, async () => {
      const { harness, store } = await rateLimited({ requests_per_minute: 1 });
      expect(
        (await send(harness, {}, { refusedLater: new GatewayError(code, 'refused after rate-limit') })).refusal,
      ).to.equal(undefined);
      expect((await send(harness)).refusal).to.equal(undefined);
      expect((await send(harness)).refusal?.code).to.equal('rate_limited');
      await store.close();
    });
  }

  it('a request that failed upstream keeps its token taken', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 1 });
    await send(harness, {}, { error: new GatewayError('upstream_timeout', 'the provider did not answer') });
    expect((await send(harness)).refusal?.code).to.equal('rate_limited');
    await store.close();
  });

  it('a refunded request adds no tokens to the minute', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 5, tokens_per_minute: 1000 });
    await send(
      harness,
      {},
      { usage: { inputTokens: 7 }, refusedLater: new GatewayError('budget_exceeded', 'refused') },
    );
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(0);
    await send(harness, {}, { usage: { inputTokens: 7 } });
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(7);
    await store.close();
  });

  it('the headers describe the bucket with the fewest tokens left, the first of equals', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 1, requests_per_second: 10 });
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
    await store.close();
    const equal = await rateLimited({ requests_per_minute: 2, requests_per_second: 2 });
    // both have 1 left: the per-minute one is listed first
    expect((await send(equal.harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '30',
    });
    await equal.store.close();
  });

  it('requests_per_second alone', async () => {
    const { harness, store } = await rateLimited({ requests_per_second: 3 });
    // 3 a second: one token every 333.3 ms, full again 334 ms after one take
    expect((await send(harness)).headers).to.deep.equal({
      'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '2',
      'x-ratelimit-reset': '1',
    });
    await store.close();
  });

  it('when several buckets are empty, the refusal names each and waits for the last', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 1, requests_per_second: 1 });
    await send(harness);
    const { refusal } = await send(harness);
    expect(refusal?.message).to.equal(
      'Rate limit reached: 1 requests per minute for workspace default; 1 requests per second for workspace default. Retry after 60 s.',
    );
    expect(refusal?.headers['retry-after']).to.equal('60');
    await store.close();
  });

  it('tokens_per_minute: Retry-After is the rest of the current minute', async () => {
    const { harness, store } = await rateLimited({ tokens_per_minute: 1 });
    await send(harness, {}, { usage: { inputTokens: 1 } });
    const before = Date.now();
    const { refusal } = await send(harness);
    const after = Date.now();
    const secondsLeft = (now: number) => Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000));
    expect(Number(refusal?.headers['retry-after'])).to.be.oneOf([secondsLeft(before), secondsLeft(after)]);
    await store.close();
  });

  it('a workspace the config does not know, and one without rate limits, are let through untouched', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 1 });
    expect(await send(harness, {}, { workspace: 'unknown', usage: { inputTokens: 3 } })).to.deep.equal({
      refusal: undefined,
      headers: {},
    });
    expect(await send(harness, {}, { workspace: 'unknown', usage: { inputTokens: 3 } })).to.deep.equal({
      refusal: undefined,
      headers: {},
    });
    await store.close();
  });

  describe('when the limit store is unreachable (on_error: open)', () => {
    it('the request rate is not checked, and that is logged as "request rate"', async () => {
      const { harness, lines } = await rateLimited({ requests_per_minute: 1 }, failingLimitStore('take'));
      expect(await send(harness)).to.deep.equal({ refusal: undefined, headers: {} });
      expect(await send(harness)).to.deep.equal({ refusal: undefined, headers: {} });
      expect(lines.map((l) => [l.what, l.policy])).to.deep.equal([['request rate', 'open']]);
    });

    it('the token rate is not checked, logged as "tokens_per_minute"', async () => {
      const { harness, lines } = await rateLimited(
        { tokens_per_minute: 1 },
        failingLimitStore('windowTotal', 'addToWindow'),
      );
      expect((await send(harness, {}, { usage: { inputTokens: 5 } })).refusal).to.equal(undefined);
      expect((await send(harness)).refusal).to.equal(undefined);
      expect(lines.map((l) => l.what)).to.deep.equal(['tokens_per_minute']);
    });

    it('counting the tokens of a completed request fails quietly, logged as "tokens_per_minute"', async () => {
      const { harness, lines } = await rateLimited({ tokens_per_minute: 10 }, failingLimitStore('addToWindow'));
      await send(harness, {}, { usage: { inputTokens: 5 } });
      expect(lines.map((l) => l.what)).to.deep.equal(['tokens_per_minute']);
    });

    it('a refund that fails is logged as "request rate refund"', async () => {
      const { harness, lines } = await rateLimited({ requests_per_minute: 5 }, failingLimitStore('refund'));
      await send(harness, {}, { refusedLater: new GatewayError('budget_exceeded', 'refused') });
      expect(lines.map((l) => l.what)).to.deep.equal(['request rate refund']);
    });
  });

  it('a workspace without rate limits gets no headers and is never refused', async () => {
    const { harness, store } = await rateLimited({ concurrent_streams: 1 });
    for (let i = 0; i < 3; i++) expect(await send(harness)).to.deep.equal({ refusal: undefined, headers: {} });
    await store.close();
  });
});
