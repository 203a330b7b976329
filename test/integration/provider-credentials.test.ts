import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { ANTHROPIC_KEY, OPENAI_KEY, TEST_ADMIN_TOKEN, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream, type ReceivedRequest } from '../helpers/upstream';

const GOOGLE_KEY = 'AIza-test-google-PLANTED-SECRET-0007';

/**
 * A credential reaches only the provider that declares its header: a request carrying several keys sends the
 * resolved provider's one key, and never a gateway key or the admin token, whichever header they are put in.
 * Clients are the official SDKs; the provider is a loopback server that records what it received.
 */
describe('credentials per provider', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  // A YAML provider whose key travels in a header of its own (Gemini's x-goog-api-key).
  useGateway(
    upstream,
    (g) => (gw = g),
    'providers:\n  gemini: { type: openai-compatible, base_url: "http://127.0.0.1:9/gemini", prefixes: [gemini-], auth: { header: x-goog-api-key } }\n',
  );

  const message = { model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };
  const openai = (apiKey: string, headers: Record<string, string> = {}) =>
    new OpenAI({
      apiKey,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, ...headers },
    });
  // @anthropic-ai/sdk 1.x sends its apiKey (and authToken) as Authorization: Bearer; x-api-key, the header curl and
  // earlier SDKs use, rides in defaultHeaders.
  const anthropic = (bearerKey: string, headers: Record<string, string> = {}) =>
    new Anthropic({
      apiKey: bearerKey,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, ...headers },
    });

  /** Every credential-bearing header the provider received, by name. */
  function credentialsSeen(r: ReceivedRequest): Record<string, unknown> {
    const names = [
      'authorization',
      'x-api-key',
      'x-goog-api-key',
      'x-admin-token',
      'x-gateway-key',
      'proxy-authorization',
    ];
    return Object.fromEntries(names.filter((n) => r.headers[n] !== undefined).map((n) => [n, r.headers[n]]));
  }

  it("OpenAI gets the OpenAI key only: not the Anthropic key, another provider's key, the gateway key or the admin token", async () => {
    const client = openai(OPENAI_KEY, {
      'x-api-key': ANTHROPIC_KEY,
      'x-goog-api-key': GOOGLE_KEY,
      'X-Admin-Token': TEST_ADMIN_TOKEN,
    });
    const done = await client.chat.completions.create(chat);
    expect(done.choices[0].message.content).to.be.a('string');
    const seen = upstream.last();
    expect(seen.mount).to.equal('openai');
    expect(credentialsSeen(seen)).to.deep.equal({ authorization: `Bearer ${OPENAI_KEY}` });
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-gateway-'))).to.deep.equal([]);
  });

  it('Anthropic gets the Anthropic key only: the OpenAI key in Authorization beside x-api-key stays behind', async () => {
    const client = anthropic(OPENAI_KEY, { 'x-api-key': ANTHROPIC_KEY, 'X-Admin-Token': TEST_ADMIN_TOKEN });
    const done = await client.messages.create(message);
    expect(done.content[0].type).to.equal('text');
    const seen = upstream.last();
    expect(seen.mount).to.equal('anthropic');
    expect(credentialsSeen(seen)).to.deep.equal({ 'x-api-key': ANTHROPIC_KEY });
  });

  it("Anthropic with its key in Authorization: Bearer: that header goes, another provider's x-goog-api-key does not", async () => {
    await anthropic(ANTHROPIC_KEY, { 'x-goog-api-key': GOOGLE_KEY }).messages.create(message);
    expect(credentialsSeen(upstream.last())).to.deep.equal({ authorization: `Bearer ${ANTHROPIC_KEY}` });
  });

  it('Anthropic streams carry the same single credential', async () => {
    const final = await anthropic(OPENAI_KEY, { 'x-api-key': ANTHROPIC_KEY }).messages.stream(message).finalMessage();
    expect(final.usage.output_tokens).to.be.a('number');
    expect(credentialsSeen(upstream.last())).to.deep.equal({ 'x-api-key': ANTHROPIC_KEY });
  });

  it('the admin token as the OpenAI key is refused before anything leaves: 401 provider_key_missing naming X-Gateway-Key', async () => {
    const err = await openai(TEST_ADMIN_TOKEN)
      .chat.completions.create(chat)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
    const body = (err as InstanceType<typeof OpenAI.AuthenticationError>).error as { code: string; message: string };
    expect(body.code).to.equal('provider_key_missing');
    expect(body.message)
      .to.include('Authorization header carries a Tollgate credential')
      .and.to.include('X-Gateway-Key');
    expect(body.message).to.not.include(TEST_ADMIN_TOKEN);
    expect(upstream.received).to.have.length(0);
  });

  it('the gateway key as the OpenAI key is refused the same way', async () => {
    const err = await openai(gw.key)
      .chat.completions.create(chat)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
    expect(((err as InstanceType<typeof OpenAI.AuthenticationError>).error as { code: string }).code).to.equal(
      'provider_key_missing',
    );
    expect(upstream.received).to.have.length(0);
  });

  it('Anthropic: the admin token in x-api-key is skipped, the real key in Authorization goes', async () => {
    await anthropic(ANTHROPIC_KEY, { 'x-api-key': TEST_ADMIN_TOKEN }).messages.create(message);
    expect(credentialsSeen(upstream.last())).to.deep.equal({ authorization: `Bearer ${ANTHROPIC_KEY}` });
  });

  it('Anthropic: the admin token as the only credential is refused, nothing sent', async () => {
    const err = await anthropic(TEST_ADMIN_TOKEN)
      .messages.create(message)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).to.be.instanceOf(Anthropic.AuthenticationError);
    expect(JSON.stringify((err as InstanceType<typeof Anthropic.AuthenticationError>).error)).to.include(
      'provider_key_missing',
    );
    expect(upstream.received).to.have.length(0);
  });
});
