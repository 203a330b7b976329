import { expect } from 'chai';
import { gatewayConfigSchema } from '../../config/schema';
import { GatewayError } from '../../core/errors';
import { createPluginHarness, createTestContext, type PluginHarness } from '../../core/testing';
import type { Usage } from '../../core/usage';
import { MemoryLimitStore } from '../../plugins/limits/memory-store';
import { rateLimit } from '../../plugins/rate-limit';

/** The rate-limit plugin as the gateway builds it, over an in-memory limit store, for one workspace's limits. */
async function rateLimited(limits: Record<string, unknown>): Promise<{ harness: PluginHarness; store: MemoryLimitStore }> {
  const store = new MemoryLimitStore();
  const config = gatewayConfigSchema.parse({ workspaces: [{ id: 'default', limits }] });
  const harness = await createPluginHarness(rateLimit, { services: { Config: config, LimitStore: store } });
  return { harness, store };
}

/** One request through the plugin: the refusal (or undefined) and the headers the client gets. */
async function send(harness: PluginHarness, tags: Record<string, string> = {}, answer: { usage?: Usage; error?: GatewayError } = {}) {
  const ctx = createTestContext({ model: 'gpt-4o-mini', tags });
  let refusal: GatewayError | undefined;
  try {
    await harness.run('beforeUpstream', ctx);
  } catch (err) {
    refusal = err as GatewayError;
  }
  ctx.error = refusal ?? answer.error;
  ctx.usage = refusal ? undefined : answer.usage;
  await harness.complete(ctx);
  return { refusal, headers: { ...ctx.responseHeaders } };
}

describe('rate-limit plugin', () => {
  it('requests_per_minute: a burst of the limit passes, with the x-ratelimit headers counting down; the next is refused', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 2 });
    // 2 a minute refill one token every 30 s: after one take the bucket is full again in 30 s, after two in 60 s.
    expect((await send(harness)).headers).to.deep.equal({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': '30' });
    expect((await send(harness)).headers).to.deep.equal({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60' });
    const { refusal } = await send(harness);
    expect(refusal?.code).to.equal('rate_limited');
    expect(refusal?.status).to.equal(429);
    expect(refusal?.message).to.equal('Rate limit reached: 2 requests per minute for workspace default. Retry after 30 s.');
    expect(refusal?.headers).to.deep.equal({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60', 'retry-after': '30' });
    await store.close();
  });

  it('requests_per_second on top: the headers describe the tighter bucket, and the refusal names it', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 100, requests_per_second: 2 });
    // per second: 2 a second refill one token every 500 ms (reset rounds up to 1 s); per minute: 99 left.
    expect((await send(harness)).headers).to.deep.equal({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': '1' });
    expect((await send(harness)).headers).to.deep.equal({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1' });
    const { refusal } = await send(harness);
    expect(refusal?.message).to.equal('Rate limit reached: 2 requests per second for workspace default. Retry after 1 s.');
    expect(refusal?.headers['retry-after']).to.equal('1');
    await store.close();
  });

  it('per tag value: each customer has its own bucket, named in the refusal', async () => {
    const { harness, store } = await rateLimited({ per_tag: { customer_id: { requests_per_minute: 1 } } });
    expect((await send(harness, { customer_id: 'acme' })).refusal).to.equal(undefined);
    const { refusal } = await send(harness, { customer_id: 'acme' });
    expect(refusal?.message).to.equal('Rate limit reached: 1 requests per minute for customer_id=acme. Retry after 60 s.');
    expect((await send(harness, { customer_id: 'globex' })).refusal).to.equal(undefined);
    // a request without the tag falls under no per-tag limit, and there is no workspace limit
    const untagged = await send(harness);
    expect(untagged.refusal).to.equal(undefined);
    expect(untagged.headers).to.deep.equal({});
    await store.close();
  });

  it('workspace and tag limits together: the refusal names only the bucket that is empty', async () => {
    const { harness, store } = await rateLimited({ requests_per_minute: 10, per_tag: { customer_id: { requests_per_minute: 1 } } });
    expect((await send(harness, { customer_id: 'acme' })).headers).to.deep.equal({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60' });
    const { refusal } = await send(harness, { customer_id: 'acme' });
    expect(refusal?.message).to.equal('Rate limit reached: 1 requests per minute for customer_id=acme. Retry after 60 s.');
    // the refused request took nothing from the workspace bucket: 9 of 10 left after the first, 8 after the next
    expect((await send(harness, { customer_id: 'globex' })).headers).to.deep.equal({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60' });
    expect((await store.take([{ key: 'rpm:ws:default', limit: 10, windowMs: 60_000 }])).buckets[0].remaining).to.equal(7);
    await store.close();
  });

  it('tokens_per_minute: counts input, output and cache tokens of completed requests, refused once the minute holds the limit', async () => {
    const { harness, store } = await rateLimited({ tokens_per_minute: 100 });
    const usage = { inputTokens: 50, outputTokens: 30, cacheReadTokens: 10, cacheWriteTokens: 5, cacheWrite1hTokens: 4, reasoningTokens: 20 };
    expect((await send(harness, {}, { usage })).refusal).to.equal(undefined);
    // 50 + 30 + 10 + 5 + 4 = 99: reasoning is inside output and not counted twice
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(99);
    expect((await send(harness, {}, { usage: { outputTokens: 1 } })).refusal).to.equal(undefined);
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(100);
    const { refusal } = await send(harness);
    expect(refusal?.code).to.equal('rate_limited');
    const wait = refusal!.headers['retry-after'];
    expect(Number(wait)).to.be.within(1, 60);
    expect(refusal?.message).to.equal(`Token rate limit reached for workspace default: 100 of 100 tokens per minute used. Retry after ${wait} s.`);
    // no rate header: only a token limit is set
    expect((await send(harness)).headers).to.deep.equal({});
    await store.close();
  });

  it('tokens_per_minute per tag value only counts that value\'s requests', async () => {
    const { harness, store } = await rateLimited({ per_tag: { customer_id: { tokens_per_minute: 10 } } });
    await send(harness, { customer_id: 'acme' }, { usage: { inputTokens: 10 } });
    expect((await send(harness, { customer_id: 'acme' })).refusal?.message).to.match(/^Token rate limit reached for customer_id=acme: 10 of 10 tokens per minute used\./);
    expect((await send(harness, { customer_id: 'globex' })).refusal).to.equal(undefined);
    expect(await store.windowTotal('tpm:ws:default:tag:customer_id=acme', 60_000)).to.equal(10);
    expect(await store.windowTotal('tpm:ws:default:tag:customer_id=globex', 60_000)).to.equal(0);
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
      expect((await send(harness, {}, { error: new GatewayError(code, 'refused after rate-limit') })).refusal).to.equal(undefined);
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
    await send(harness, {}, { usage: { inputTokens: 7 }, error: new GatewayError('budget_exceeded', 'refused') });
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(0);
    await send(harness, {}, { usage: { inputTokens: 7 } });
    expect(await store.windowTotal('tpm:ws:default', 60_000)).to.equal(7);
    await store.close();
  });

  it('a workspace without rate limits gets no headers and is never refused', async () => {
    const { harness, store } = await rateLimited({ concurrent_streams: 1 });
    for (let i = 0; i < 3; i++) expect(await send(harness)).to.deep.equal({ refusal: undefined, headers: {} });
    await store.close();
  });
});
