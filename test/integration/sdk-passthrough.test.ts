import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream, type ReceivedRequest } from '../helpers/upstream';

/**
 * The official SDKs, pointed at Tollgate, must return exactly what they return when pointed at the provider
 * (here: a loopback server replaying recorded provider responses), and the provider must see the exact
 * auth header and no X-Gateway-* header.
 */
describe('official SDKs through the gateway', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  const tags = {
    'X-Gateway-Metadata': '{"agent":"support-bot","feature":"triage"}',
    'X-Gateway-Metadata-Customer-Id': 'acme',
  };

  useGateway(upstream, (g) => (gw = g));

  const openaiVia = (baseURL: string, headers: Record<string, string> = {}) =>
    new OpenAI({ apiKey: OPENAI_KEY, baseURL, maxRetries: 0, defaultHeaders: headers });
  const openaiDirect = () => openaiVia(`${upstream.url}/openai/v1`);
  const openaiGateway = () => openaiVia(`${gw.url}/v1`, { 'X-Gateway-Key': gw.key, ...tags });
  const anthropicVia = (baseURL: string, headers: Record<string, string> = {}) =>
    new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL, maxRetries: 0, defaultHeaders: headers });
  const anthropicDirect = () => anthropicVia(`${upstream.url}/anthropic`);
  const anthropicGateway = () => anthropicVia(gw.url, { 'X-Gateway-Key': gw.key, ...tags });

  /** Framing headers that differ between any two HTTP connections; everything else must arrive unchanged. */
  const CONNECTION_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

  /**
   * The provider saw what it would have seen from the SDK directly: every header with the same value (the
   * provider key included, verbatim), nothing added but framing, and no X-Gateway-* header.
   */
  function expectCleanForward(
    seen: ReceivedRequest,
    direct: ReceivedRequest,
    upstreamPath: string,
    credential: string,
  ): void {
    expect(seen.url).to.equal(upstreamPath);
    expect(seen.headers[credential], 'provider key').to.equal(direct.headers[credential]).and.to.be.a('string');
    for (const [name, value] of Object.entries(direct.headers)) {
      if (!CONNECTION_HEADERS.has(name)) expect(seen.headers[name], `header ${name}`).to.equal(value);
    }
    const leaked = Object.keys(seen.headers).filter((h) => h.startsWith('x-gateway-'));
    expect(leaked, 'X-Gateway-* headers reached the provider').to.deep.equal([]);
    const added = Object.keys(seen.headers).filter((h) => !(h in direct.headers) && !CONNECTION_HEADERS.has(h));
    expect(added, 'headers the gateway added').to.deep.equal([]);
  }

  /** Runs the same SDK call directly and through the gateway; returns both results and what upstream saw. */
  async function both<T>(
    direct: () => Promise<T>,
    viaGateway: () => Promise<T>,
  ): Promise<{ direct: T; gateway: T; seen: ReceivedRequest; directSeen: ReceivedRequest }> {
    const d = await direct();
    const directSeen = upstream.last();
    const g = await viaGateway();
    const seen = upstream.last();
    expect(seen.body.equals(directSeen.body), 'the gateway changed the request body').to.equal(true);
    return { direct: d, gateway: g, seen, directSeen };
  }

  it('chat completions (JSON): same result, clean forward', async () => {
    const call = (c: OpenAI) => () =>
      c.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const r = await both(call(openaiDirect()), call(openaiGateway()));
    expect(r.gateway).to.deep.equal(r.direct);
    expect(r.gateway.usage?.prompt_tokens_details?.cached_tokens).to.equal(1024);
    expectCleanForward(r.seen, r.directSeen, '/openai/v1/chat/completions', 'authorization');
  });

  it('chat completions (stream with usage): same chunks, in order', async () => {
    const call = (c: OpenAI) => async () => {
      const stream = await c.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    };
    const r = await both(call(openaiDirect()), call(openaiGateway()));
    expect(r.gateway.length).to.be.greaterThan(2);
    expect(r.gateway).to.deep.equal(r.direct);
    expect(r.gateway.at(-1)?.usage?.total_tokens, "the recorded stream's usage").to.equal(24);
    expectCleanForward(r.seen, r.directSeen, '/openai/v1/chat/completions', 'authorization');
  });

  it('responses (JSON and stream)', async () => {
    const create = (c: OpenAI) => () => c.responses.create({ model: 'gpt-5.4', input: 'hello' });
    const r = await both(create(openaiDirect()), create(openaiGateway()));
    expect(r.gateway).to.deep.equal(r.direct);
    expect(r.gateway.usage?.output_tokens_details?.reasoning_tokens).to.equal(9);
    expectCleanForward(r.seen, r.directSeen, '/openai/v1/responses', 'authorization');

    const stream = (c: OpenAI) => async () => {
      const events = [];
      for await (const e of await c.responses.create({ model: 'gpt-5.4', input: 'hello', stream: true }))
        events.push(e);
      return events;
    };
    const s = await both(stream(openaiDirect()), stream(openaiGateway()));
    expect(s.gateway.map((e) => e.type)).to.include('response.completed');
    expect(s.gateway).to.deep.equal(s.direct);
  });

  it('embeddings', async () => {
    const call = (c: OpenAI) => () =>
      c.embeddings.create({ model: 'text-embedding-3-small', input: 'hello', encoding_format: 'float' });
    const r = await both(call(openaiDirect()), call(openaiGateway()));
    expect(r.gateway).to.deep.equal(r.direct);
    expect(r.gateway.data[0].embedding.length).to.be.greaterThan(10);
    expectCleanForward(r.seen, r.directSeen, '/openai/v1/embeddings', 'authorization');
  });

  it("messages (JSON): the SDK's key header and anthropic-version forwarded untouched", async () => {
    const call = (c: Anthropic) => () =>
      c.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    const r = await both(call(anthropicDirect()), call(anthropicGateway()));
    expect(r.gateway).to.deep.equal(r.direct);
    expect(r.gateway.type).to.equal('message');
    expectCleanForward(r.seen, r.directSeen, '/anthropic/v1/messages', 'authorization');
    expect(r.seen.headers['anthropic-version']).to.be.a('string');
    expect(r.seen.headers.authorization).to.equal(`Bearer ${ANTHROPIC_KEY}`);
  });

  it('messages (stream): same events, and the SDK assembles the same final message', async () => {
    const call = (c: Anthropic) => async () => {
      const stream = c.messages.stream({
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const events = [];
      for await (const e of stream) events.push(e);
      return { events, final: await stream.finalMessage() };
    };
    const r = await both(call(anthropicDirect()), call(anthropicGateway()));
    expect(r.gateway.events.map((e) => e.type)).to.include.members(['message_start', 'message_delta', 'message_stop']);
    expect(r.gateway).to.deep.equal(r.direct);
    expectCleanForward(r.seen, r.directSeen, '/anthropic/v1/messages', 'authorization');
  });

  it('upstream errors reach the SDK exactly as the provider sent them', async () => {
    upstream.respondWith(() => ({
      status: 401,
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/error_401_invalid_api_key.json'),
    }));
    const err = await openaiGateway()
      .chat.completions.create({ model: 'gpt-4o', messages: [] })
      .catch((e) => e);
    expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
    expect(err.status).to.equal(401);
    expect(err.error).to.deep.equal(JSON.parse(fixtureBytes('openai/error_401_invalid_api_key.json').toString()).error);
  });
});
