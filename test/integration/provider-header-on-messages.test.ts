import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { call } from '../framework/helpers';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };

/**
 * Provider detection, rule 1 before rule 2: X-Gateway-Provider always wins, also on /v1/messages, which without
 * the header always goes to the messages-style provider. The named provider serves the request, or refuses it
 * when it does not serve /v1/messages; it is never sent to Anthropic instead.
 */
describe('X-Gateway-Provider wins on /v1/messages too', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  // A provider with an Anthropic-format messages API of its own (DeepSeek publishes one under /anthropic); bearer:
  // the Anthropic SDK sends its key as Authorization: Bearer.
  useGateway(
    upstream,
    (g) => (gw = g),
    (url) => `
providers:
  deepseek: { type: openai-compatible, base_url: "${url}/deepseek/anthropic/v1", endpoints: [messages], auth: bearer, usage: anthropic }
`,
  );

  it('a provider named in the header that serves /v1/messages gets the request, not Anthropic', async () => {
    const client = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, 'X-Gateway-Provider': 'deepseek' },
    });
    const res = await client.messages.create(MESSAGES).asResponse();
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(fixtureBytes('anthropic/messages_basic.json'))).to.equal(true);
    expect(upstream.received.map((r) => r.url)).to.deep.equal(['/deepseek/anthropic/v1/messages']);
    expect(upstream.last().headers.authorization, 'the key the SDK sent, as sent').to.equal(`Bearer ${ANTHROPIC_KEY}`);
  });

  it('naming the OpenAI provider, which does not serve /v1/messages: 400 endpoint_not_supported, nothing sent', async () => {
    const r = await call(gw, '/v1/messages', MESSAGES, { 'x-gateway-provider': 'openai' });
    expect(r.status, r.text).to.equal(400);
    expect(r.json).to.deep.equal({
      error: {
        message: 'Provider openai does not serve POST /v1/messages.',
        type: 'invalid_request_error',
        param: null,
        code: 'endpoint_not_supported',
      },
    });
    expect(upstream.received, 'sent to no provider, Anthropic included').to.have.length(0);
  });
});
