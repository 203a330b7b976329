import { expect } from 'chai';
import { join } from 'node:path';
import { ConfigError, parseConfig } from '../../config/load';
import { type TestGateway, useGateway } from '../helpers/gateway';
import { sseChunks, TestUpstream, type Responder } from '../helpers/upstream';
import { bootError, bootGateway, call, chat, EXAMPLES_DIR, FIXTURES_DIR, waitForRecord } from './helpers';

const ACME = join(EXAMPLES_DIR, 'providers/acme');
const ACME_KEY = 'acme-test-PLANTED-SECRET-0004';

/** Acme's wire format (examples/providers/acme/usage.ts): OpenAI-shaped, with its own usage object. */
const ACME_JSON = Buffer.from(
  JSON.stringify({
    id: 'acme-1',
    object: 'chat.completion',
    created: 1,
    model: 'acme-large',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
    usage: { input_tokens: 120, cached_input_tokens: 100, output_tokens: 30 },
  }),
);
const chunk = (body: object) =>
  `data: ${JSON.stringify({ id: 'acme-2', object: 'chat.completion.chunk', model: 'acme-large', ...body })}\n\n`;
const ACME_SSE = Buffer.from(
  [
    chunk({ choices: [{ index: 0, delta: { content: 'Hel' } }] }),
    chunk({ choices: [{ index: 0, delta: { content: 'lo' } }] }),
    chunk({ choices: [], usage: { input_tokens: 50, cached_input_tokens: 0, output_tokens: 2 } }),
    'data: [DONE]\n\n',
  ].join(''),
);

const acmeResponder: Responder = (req, body) => {
  if (!req.mount.startsWith('acme') || !req.url.endsWith('/chat/completions')) return undefined;
  return body?.stream
    ? { status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseChunks(ACME_SSE) }
    : { status: 200, headers: { 'content-type': 'application/json' }, body: ACME_JSON };
};

const acmeHeaders = { authorization: undefined, 'x-acme-key': ACME_KEY };

/** A provider written in code (examples/providers/acme), deployed from YAML with `use:` and proxied through. */
describe('examples/providers/acme behind the gateway', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  useGateway(
    upstream,
    (started) => (gw = started),
    (url) => `
providers:
  acme: { use: "${ACME}", base_url: "${url}/acme/v1" }
  # The same module deployed twice: the YAML key is the slug, the other keys override the module's.
  acme-eu: { use: "${ACME}", base_url: "${url}/acme-eu/v1", prefixes: [acme-eu-], display_name: Acme EU }
# Acme's prices ship with the module (acme-large: input 2, output 6, cache_read 0.5 USD per 1M tokens). This
# deployment's own price for acme-large under acme-eu wins over them.
pricing:
  models:
    - { provider: acme-eu, model: acme-large, input: "1", output: "3", cache_read: "0.25" }
`,
  );
  beforeEach(() => {
    upstream.respondWith(acmeResponder);
  });

  it("routes acme- models to it with the client's X-Acme-Key, and reads its own usage shape", async () => {
    const r = await call(gw, '/v1/chat/completions', chat('acme-large'), acmeHeaders);
    expect(r.status).to.equal(200);
    expect(Buffer.from(r.text).equals(ACME_JSON)).to.equal(true);
    const sent = upstream.last();
    expect(sent.url).to.equal('/acme/v1/chat/completions');
    expect(sent.headers['x-acme-key']).to.equal(ACME_KEY);
    expect(sent.headers.authorization).to.equal(undefined);
    // With the module's own prices: 20 input x $2 + 100 cached x $0.5 + 30 output x $6 per 1M tokens = $0.00027.
    expect(r.headers['x-gateway-cost']).to.equal('0.00027');
    const record = await waitForRecord(gw, r.headers['x-gateway-request-id']);
    expect(record).to.include({
      provider: 'acme',
      input_tokens: 20,
      cache_read_tokens: 100,
      output_tokens: 30,
      cost_usd: '0.00027',
      provenance: 'measured',
    });
  });

  it('meters a stream with its custom accumulator while relaying it unchanged', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('acme-large', { stream: true }), acmeHeaders);
    expect(r.text).to.equal(ACME_SSE.toString('utf8'));
    const record = await waitForRecord(gw, r.headers['x-gateway-request-id']);
    expect(record).to.include({
      provider: 'acme',
      input_tokens: 50,
      output_tokens: 2,
      cost_usd: '0.000112',
      provenance: 'measured',
    });
  });

  it('reuses the built-in OpenAI parser for embeddings', async () => {
    const r = await call(gw, '/v1/embeddings', { model: 'acme-embed', input: 'hi' }, acmeHeaders);
    expect(r.status).to.equal(200);
    const record = await waitForRecord(gw, r.headers['x-gateway-request-id']);
    expect(record.provider).to.equal('acme');
    expect(record.input_tokens).to.equal(r.json.usage.prompt_tokens);
  });

  it('asks for its own key header when it is missing', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('acme-large'));
    expect(r.status).to.equal(401);
    expect(r.json.error.code).to.equal('provider_key_missing');
    expect(r.json.error.message).to.equal(
      'Acme AI needs your provider key in the x-acme-key: <key> header. It is forwarded as is and never stored.',
    );
    expect(upstream.received).to.have.length(0);
  });

  it('deploys the same module under a second slug with its YAML overrides', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('acme-eu-large'), acmeHeaders);
    expect(r.status).to.equal(200);
    expect(upstream.last().url).to.equal('/acme-eu/v1/chat/completions');
    expect((await waitForRecord(gw, r.headers['x-gateway-request-id'])).provider).to.equal('acme-eu');
    const viaHeader = await call(gw, '/v1/chat/completions', chat('anything'), {
      ...acmeHeaders,
      'x-gateway-provider': 'acme-eu',
    });
    expect(viaHeader.status).to.equal(200);
  });

  it("prices with the module's own prices under every slug, and the deployment's pricing.models wins", async () => {
    const viaEu = await call(gw, '/v1/chat/completions', chat('acme-large'), {
      ...acmeHeaders,
      'x-gateway-provider': 'acme-eu',
    });
    // The deployment's price for acme-eu: 20 input x $1 + 100 cached x $0.25 + 30 output x $3 per 1M = $0.000135.
    expect(viaEu.headers['x-gateway-cost']).to.equal('0.000135');
    expect(await waitForRecord(gw, viaEu.headers['x-gateway-request-id'])).to.include({
      provider: 'acme-eu',
      cost_usd: '0.000135',
      provenance: 'measured',
    });
    const { json: models } = await call(gw, '/v1/models', undefined);
    const large = models.data.find(
      (m: { id: string; owned_by: string }) => m.id === 'acme-large' && m.owned_by === 'acme',
    );
    expect(large, 'acme-large in the catalog, from the module').to.not.equal(undefined);
  });

  it('leaves YAML-only openai-compatible providers working alongside', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('mistral-large-latest'));
    expect(r.status).to.equal(200);
    expect(upstream.last().url).to.equal('/mistral/v1/chat/completions');
  });
});

describe('provider modules: loading from YAML', () => {
  it('loads a module by a path relative to the config file', async () => {
    const gateway = await bootGateway('providers:\n  acme: { use: ./dist/examples/providers/acme }\n');
    try {
      const acme = gateway.providers.get('acme');
      expect(acme).to.include({ slug: 'acme', displayName: 'Acme AI', baseUrl: 'https://api.acme.example/v1' });
      expect(acme?.auth.headers).to.deep.equal(['x-acme-key']);
      expect(gateway.providers.byModel('acme-large')?.slug).to.equal('acme');
    } finally {
      await gateway.close(0);
    }
  });

  it('a prefix another provider claims stops start-up, naming both providers', async () => {
    const message = await bootError(`providers:\n  acme: { use: "${ACME}", prefixes: [gpt-] }\n`);
    expect(message).to.equal('model prefix "gpt-" is claimed by both providers openai and acme');
  });

  it('a malformed module stops start-up, naming the provider and each problem', async () => {
    const path = join(FIXTURES_DIR, 'broken-provider');
    const message = await bootError(`providers:\n  broken: { use: "${path}" }\n`);
    expect(message).to.equal(
      `providers.broken: "${path}" is not a valid provider module: auth.headers.0: expected a lower-case header name (apiKeyHeader() lower-cases it); usage.createStreamAccumulator: expected a function`,
    );
  });

  it('a module whose prices are not valid stops start-up, naming the provider and the price', async () => {
    const path = join(FIXTURES_DIR, 'badly-priced-provider');
    const message = await bootError(`providers:\n  cheap: { use: "${path}" }\n`);
    expect(message).to.equal(
      'providers.cheap: the module\'s prices are not valid: prices.0.input: must be a decimal number, got "cheap"; ' +
        "prices.1.provider: not allowed: a module's prices apply to the slug it is deployed as",
    );
  });

  it('a module that needs another plugin API version', async () => {
    const path = join(FIXTURES_DIR, 'future-provider');
    const message = await bootError(`providers:\n  future: { use: "${path}" }\n`);
    expect(message).to.equal(
      `providers.future: "${path}": it needs plugin API version "3", but this Tollgate provides version "2"`,
    );
  });

  it('a module that is missing or exports no provider', async () => {
    expect(await bootError('providers:\n  ghost: { use: ./no/such/provider }\n')).to.match(
      /^providers\.ghost: cannot load "\.\/no\/such\/provider": Cannot find module/,
    );
    expect(await bootError('providers:\n  nothing: { use: ./not-a-plugin }\n', FIXTURES_DIR)).to.equal(
      'providers.nothing: "./not-a-plugin" does not export a provider module (export default defineProvider({ ... }))',
    );
  });

  it('type and use together are refused by the config schema', () => {
    expect(() =>
      parseConfig('providers:\n  acme: { type: openai-compatible, use: ./x, base_url: "https://a.example" }\n', {}),
    ).to.throw(ConfigError, 'providers.acme.use: give either type or use, not both');
  });
});
