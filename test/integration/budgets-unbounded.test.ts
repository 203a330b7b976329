import { expect } from 'chai';
import type { EndpointKey } from '../../core/endpoints';
import { endpointByKey } from '../../core/endpoints';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, type TestGateway, workspaceWith } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/** A request to send: its endpoint, the provider named by header, and its JSON body or form fields. */
interface Attack {
  name: string;
  endpoint: EndpointKey;
  provider: string;
  body: Record<string, unknown>;
}

/** A model name each deployed provider routes but the catalog does not price. */
const UNPRICED_MODEL: Record<string, string> = {
  openai: 'gpt-tollgate-unpriced',
  anthropic: 'claude-tollgate-unpriced',
  perplexity: 'sonar-tollgate-unpriced',
  openrouter: 'tollgate/unpriced',
  mistral: 'mistral-tollgate-unpriced',
};

/** Endpoints that bill nothing themselves: models lists, and files and batches (their results are counted). */
type Unbilled = 'models' | 'files' | 'batches' | 'messages.batches';
const UNBILLED: readonly EndpointKey[] = ['models', 'files', 'batches', 'messages.batches'];

/** The smallest request each endpoint takes, besides its model. */
const MINIMAL: Record<Exclude<EndpointKey, Unbilled>, Record<string, unknown>> = {
  'chat.completions': { messages: [{ role: 'user', content: 'hi' }] },
  messages: { max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  responses: { input: 'hi' },
  embeddings: { input: 'hi' },
  'audio.speech': { input: 'hi', voice: 'alloy' },
  'audio.transcriptions': { file: 'audio' },
  'audio.translations': { file: 'audio' },
  'images.generations': { prompt: 'an otter' },
  'images.edits': { image: 'image', prompt: 'an otter' },
  'images.variations': { image: 'image' },
};

/** Priced models with units the catalog cannot price, or fields no budget can read. */
const MALFORMED: Attack[] = [
  {
    name: 'dall-e-3 at a size it has no price for',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'dall-e-3', prompt: 'x', size: '512x512' },
  },
  {
    name: 'dall-e-3 at a quality it has no price for',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'dall-e-3', prompt: 'x', quality: 'ultra' },
  },
  {
    name: 'dall-e-3 with a numeric size',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'dall-e-3', prompt: 'x', size: 1024 },
  },
  {
    name: 'dall-e-3 with n as words',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'dall-e-3', prompt: 'x', n: 'ten' },
  },
  {
    name: 'dall-e-2 with n 0.5',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'dall-e-2', prompt: 'x', n: 0.5 },
  },
  {
    name: 'gpt-image-1 with n -1',
    endpoint: 'images.generations',
    provider: 'openai',
    body: { model: 'gpt-image-1', prompt: 'x', n: -1 },
  },
  {
    name: 'dall-e-2 edit at a size it has no price for',
    endpoint: 'images.edits',
    provider: 'openai',
    body: { model: 'dall-e-2', image: 'image', prompt: 'x', size: '2048x2048' },
  },
  {
    name: 'dall-e-2 variations with n as words',
    endpoint: 'images.variations',
    provider: 'openai',
    body: { model: 'dall-e-2', image: 'image', n: 'many' },
  },
  {
    name: 'tts-1 with an array input',
    endpoint: 'audio.speech',
    provider: 'openai',
    body: { model: 'tts-1', voice: 'alloy', input: ['a long text'] },
  },
  {
    name: 'tts-1-hd with an object input',
    endpoint: 'audio.speech',
    provider: 'openai',
    body: { model: 'tts-1-hd', voice: 'alloy', input: { text: 'x' } },
  },
  {
    name: 'gpt-4o-mini with more output tokens than can be summed',
    endpoint: 'chat.completions',
    provider: 'openai',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], n: 2 ** 30, max_tokens: 2 ** 30 },
  },
];

/** Sends one attack over loopback: JSON, or a multipart form whose `file`/`image` fields are small uploads. */
async function send(gw: TestGateway, attack: Attack): Promise<{ status: number; code?: string; param?: string }> {
  const spec = endpointByKey(attack.endpoint);
  const headers: Record<string, string> = {
    'x-gateway-key': gw.key,
    'x-gateway-provider': attack.provider,
    authorization: `Bearer ${OPENAI_KEY}`,
    'x-api-key': ANTHROPIC_KEY,
  };
  let body: string | FormData;
  if (spec.body === 'multipart') {
    body = new FormData();
    for (const [k, v] of Object.entries(attack.body)) {
      if (k === 'file') body.append(k, new Blob([Buffer.alloc(2000)], { type: 'audio/mpeg' }), 'a.mp3');
      else if (k === 'image') body.append(k, new Blob([Buffer.alloc(2000)], { type: 'image/png' }), 'a.png');
      else body.append(k, String(v));
    }
  } else {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(attack.body);
  }
  const res = await fetch(`${gw.url}${spec.path}`, { method: 'POST', headers, body });
  const text = await res.text();
  const error = res.status >= 400 ? JSON.parse(text).error : undefined;
  return { status: res.status, code: error?.code, param: error?.param };
}

/**
 * budgets.unpriced: refuse leaves no way around a budget. Every endpoint every deployed provider declares is sent
 * an unpriced model and no model at all, and priced models are sent units the catalog has no price for and fields
 * that cannot be read; under a budget each is refused before it reaches the provider, and under allow each is
 * forwarded. The provider is a loopback server.
 */
describe('budgets refuse every request whose cost they cannot bound', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() =>
    upstream.respondWith(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{}'),
    })),
  );
  afterEach(async () => {
    await gw?.stop();
    upstream.reset();
  });
  const start = (policy: string, usd = '100') =>
    startTestGateway(upstream.url, `${policy}\n${workspaceWith(`{ budgets: [{ period: day, usd: "${usd}" }] }`)}`).then(
      (g) => (gw = g),
    );

  /** Every endpoint of every deployed provider, once with an unpriced model and once without a model. */
  const everyEndpoint = (): Attack[] =>
    gw.gateway.providers.list().flatMap((p) =>
      p.endpoints
        .filter((e): e is Exclude<EndpointKey, Unbilled> => !UNBILLED.includes(e))
        .flatMap((endpoint) => [
          {
            name: `${p.slug} ${endpoint} with an unpriced model`,
            endpoint,
            provider: p.slug,
            body: { model: UNPRICED_MODEL[p.slug], ...MINIMAL[endpoint] },
          },
          { name: `${p.slug} ${endpoint} without a model`, endpoint, provider: p.slug, body: MINIMAL[endpoint] },
        ]),
    );

  it('refuse (the default): each is refused with 403 model_unpriced, and nothing reaches the provider', async () => {
    await start('');
    const attacks = [...everyEndpoint(), ...MALFORMED];
    expect(attacks.map((a) => a.endpoint)).to.include.members(['embeddings', 'messages', 'images.variations']);
    for (const attack of attacks) {
      const answer = await send(gw, attack);
      expect(answer, attack.name).to.deep.include({ status: 403, code: 'model_unpriced' });
    }
    expect(upstream.received.map((r) => r.url)).to.deep.equal([]);
  });

  it('the refusal names the field that cannot be priced', async () => {
    await start('');
    const params = [];
    for (const attack of MALFORMED) params.push((await send(gw, attack)).param);
    expect(params).to.deep.equal(['size', 'quality', 'size', 'n', 'n', 'n', 'size', 'n', 'input', 'input', 'n']);
  });

  it('allow: each is forwarded', async () => {
    await start('budgets: { unpriced: allow }');
    const attacks = [...everyEndpoint(), ...MALFORMED];
    for (const attack of attacks) expect((await send(gw, attack)).status, attack.name).to.equal(200);
    expect(upstream.received).to.have.length(attacks.length);
  });

  it('an embedding of a model priced for input only is reserved, so a budget it does not fit refuses it', async () => {
    await start('', '0.000001');
    const input = 'otter '.repeat(5000); // ~10,000 tokens at $0.10 per 1M: $0.001, past the $0.000001 budget
    const answer = await send(gw, {
      name: 'mistral-embed',
      endpoint: 'embeddings',
      provider: 'mistral',
      body: { model: 'mistral-embed', input },
    });
    expect(answer).to.deep.include({ status: 429, code: 'budget_exceeded' });
    expect(upstream.received).to.have.length(0);
  });
});
