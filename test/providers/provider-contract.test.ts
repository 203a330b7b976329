import { expect } from 'chai';
import { FormData, request } from 'undici';
import { endpointByKey, type EndpointKey } from '../../core/endpoints';
import type { ProviderModule } from '../../core/provider-contract';
import { SseDecoder } from '../../core/sse';
import type { Usage } from '../../core/usage';
import { BUILTIN_PROVIDERS } from '../../providers/registry';
import { adminGet } from '../helpers/admin';
import { fixtureBytes } from '../helpers/fixtures';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { sseChunks, TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

/**
 * The provider contract: every built-in provider module's declared endpoints go through the same checks, from the
 * module's own declaration (base URL path, paths, auth headers, prefixes, owned endpoints, usage parser) and the
 * recorded answers in test/fixtures/<slug>/. A declared endpoint with no recorded answer must be listed in
 * NOT_RECORDED with the reason, so a new provider or endpoint cannot ship without either.
 */

interface Recorded {
  /** A complete JSON answer, or an SSE stream (`.sse`, or `.chunks.jsonl`: data payloads only, framed here). */
  file: string;
  /** Extra request fields (stream: true and its options for SSE answers). */
  request?: Record<string, unknown>;
}

const STREAM = { stream: true, stream_options: { include_usage: true } };

const RECORDED: Record<string, Partial<Record<EndpointKey, Recorded[]>>> = {
  openai: {
    'chat.completions': [
      { file: 'openai/chat_completion_cached_tokens.json' },
      { file: 'openai/chat_completion_reasoning_tokens.json' },
      { file: 'openai/chat_stream_with_usage.sse', request: STREAM },
    ],
    responses: [
      { file: 'openai/responses.json' },
      { file: 'openai/responses_tools_built.json' },
      { file: 'openai/responses_stream.sse', request: { stream: true } },
    ],
    embeddings: [{ file: 'openai/embeddings_float_reformatted.json' }],
    'audio.speech': [{ file: 'openai/speech_stream_built.sse', request: { stream_format: 'sse' } }],
    'audio.transcriptions': [
      { file: 'openai/audio_transcription_verbose_json.json' },
      { file: 'openai/transcription_stream_built.sse', request: { stream: 'true' } },
    ],
    'images.generations': [{ file: 'openai/images_generations.json' }],
    models: [{ file: 'openai/models_list.json' }],
    files: [{ file: 'openai/file_batch_input_built.json' }],
    batches: [{ file: 'openai/batch_created_built.json' }],
  },
  anthropic: {
    messages: [
      { file: 'anthropic/messages_basic.json' },
      { file: 'anthropic/messages_cache_creation.json' },
      { file: 'anthropic/messages_stream.sse', request: { stream: true } },
    ],
    'messages.batches': [{ file: 'anthropic/message_batch_created_built.json' }],
  },
  perplexity: {
    'chat.completions': [
      { file: 'perplexity/sonar_chat_completion.json' },
      { file: 'perplexity/sonar_chat_completion_citations.json' },
      { file: 'perplexity/sonar_stream.chunks.jsonl', request: { stream: true } },
    ],
  },
  openrouter: {
    'chat.completions': [
      { file: 'openrouter/chat_completion_anthropic_cache_write.json' },
      { file: 'openrouter/chat_stream_with_usage.sse', request: STREAM },
    ],
    responses: [{ file: 'openrouter/responses_stream.sse', request: { stream: true } }],
    models: [{ file: 'openrouter/models_list_truncated.json' }],
  },
};

/** Declared endpoints without a recorded answer in test/fixtures, and why. */
const NOT_RECORDED: Record<string, Partial<Record<EndpointKey, string>>> = {
  openai: {
    'audio.translations': 'no recorded translation answer (same wire shape as transcriptions)',
    'images.edits': 'no recorded edit answer (same wire shape as generations)',
    'images.variations': 'no recorded variation answer (same wire shape as generations)',
  },
  anthropic: { models: 'no recorded Anthropic models list' },
  perplexity: { responses: 'no recorded Agent API answer' },
  openrouter: { embeddings: 'no recorded OpenRouter embeddings answer' },
};

const PROVIDER_KEY = 'sk-contract-PLANTED-SECRET-0009';
const WAV = 'audio/tone_2200ms_8khz.wav';

/** The bytes a provider would send: SSE fixtures as recorded, .chunks.jsonl (payloads only) framed as events. */
function answerBytes(file: string): Buffer {
  if (!file.endsWith('.chunks.jsonl')) return fixtureBytes(file);
  const lines = fixtureBytes(file).toString('utf8').split('\n');
  return Buffer.from(
    lines
      .filter((l) => l.length > 0)
      .map((l) => `data: ${l}\n\n`)
      .join(''),
  );
}

const isStream = (file: string) => file.endsWith('.sse') || file.endsWith('.chunks.jsonl');

/** What the module's own parser reads from the answer: the record must carry exactly this. */
function parsedUsage(module: ProviderModule, endpoint: EndpointKey, file: string): Usage | undefined {
  const bytes = answerBytes(file);
  if (!isStream(file)) return module.usage.fromJson(endpoint, JSON.parse(bytes.toString('utf8')));
  const accumulator = module.usage.createStreamAccumulator(endpoint);
  const decoder = new SseDecoder();
  for (const event of [...decoder.push(bytes), ...decoder.end()]) accumulator.push(event);
  return accumulator.result();
}

/** The header carrying the client's provider key, written the way the provider expects it. */
function keyHeader(module: ProviderModule, header = module.auth.headers[0]): Record<string, string> {
  return { [header]: header === 'authorization' ? `Bearer ${PROVIDER_KEY}` : PROVIDER_KEY };
}

/** A model this provider serves: the fixture's own, else one of its prefixes. */
function modelFor(module: ProviderModule, answer: Buffer): string {
  const named = /"model"\s*:\s*"([^"]+)"/.exec(answer.toString('utf8'))?.[1];
  return named ?? `${module.modelPrefixes[0] ?? ''}contract-model`;
}

function requestBody(
  endpoint: EndpointKey,
  model: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const text = 'Say hello.';
  const base: Partial<Record<EndpointKey, Record<string, unknown>>> = {
    'chat.completions': { messages: [{ role: 'user', content: text }] },
    messages: { max_tokens: 64, messages: [{ role: 'user', content: text }] },
    responses: { input: text },
    embeddings: { input: text },
    'audio.speech': { input: text, voice: 'alloy' },
    'images.generations': { prompt: text },
  };
  return { model, ...base[endpoint], ...extra };
}

interface Sent {
  status: number;
  body: Buffer;
  requestId: string;
}

async function send(
  gw: TestGateway,
  endpoint: EndpointKey,
  headers: Record<string, string>,
  fields?: Record<string, unknown>,
): Promise<Sent> {
  const spec = endpointByKey(endpoint);
  const common: Record<string, string> = {
    'x-gateway-key': gw.key,
    'x-gateway-metadata-agent': 'contract',
    ...headers,
  };
  let body: string | FormData | undefined;
  if (spec.body === 'json') {
    body = JSON.stringify(fields);
    common['content-type'] = 'application/json';
  } else if (spec.body === 'multipart') {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields ?? {})) form.append(name, String(value));
    form.append('file', new Blob([new Uint8Array(fixtureBytes(WAV))], { type: 'audio/wav' }), 'tone.wav');
    body = form;
  }
  const res = await request(`${gw.url}${spec.path}`, { method: spec.method, headers: common, body });
  const bytes = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, body: bytes, requestId: String(res.headers['x-gateway-request-id']) };
}

async function recordOf(gw: TestGateway, id: string): Promise<any> {
  let record: any;
  await waitFor(
    async () => {
      record = (await adminGet(gw, '/api/requests?limit=1000')).data.find((r: any) => r.id === id);
      return record !== undefined;
    },
    5000,
    `the record of ${id}`,
  );
  return record;
}

const sum = (...counts: (number | undefined)[]) =>
  counts.some((n) => n !== undefined) ? counts.reduce<number>((a, n) => a + (n ?? 0), 0) : null;

/**
 * Token buckets of a record (admin API names) from the parser's usage, unknown staying null. A record's input and
 * output tokens include the image and audio tokens of that side (docs/pricing.md).
 */
function buckets(usage: Usage | undefined) {
  return {
    input_tokens: sum(usage?.inputTokens, usage?.inputImageTokens, usage?.inputAudioTokens),
    output_tokens: sum(usage?.outputTokens, usage?.outputImageTokens, usage?.outputAudioTokens),
    cache_read_tokens: usage?.cacheReadTokens ?? null,
    cache_write_tokens: usage?.cacheWriteTokens ?? null,
    cache_write_1h_tokens: usage?.cacheWrite1hTokens ?? null,
    reasoning_tokens: usage?.reasoningTokens ?? null,
    citation_tokens: usage?.citationTokens ?? null,
  };
}

const pick = (record: any) => Object.fromEntries(Object.keys(buckets(undefined)).map((k) => [k, record[k]]));

/** The provider whose prefix is the longest match for the model (the spec's rule), across every built-in. */
function longestPrefixOwner(model: string): string | undefined {
  let best: { slug: string; length: number } | undefined;
  for (const m of Object.values(BUILTIN_PROVIDERS) as ProviderModule[])
    for (const p of m.modelPrefixes)
      if (model.startsWith(p) && p.length > (best?.length ?? -1)) best = { slug: m.slug, length: p.length };
  return best?.slug;
}

describe('provider contract: every built-in provider through the same checks', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    const providers = Object.values(BUILTIN_PROVIDERS)
      .map(
        (m) =>
          `  ${m.slug}: { base_url: "${upstream.url}/${m.slug}${new URL(m.baseUrl).pathname.replace(/\/$/, '')}" }`,
      )
      .join('\n');
    gw = await startTestGateway(upstream.url, `providers:\n${providers}\n`);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  beforeEach(() => upstream.reset());

  for (const module of Object.values(BUILTIN_PROVIDERS) as ProviderModule[]) {
    describe(module.slug, () => {
      it('has a recorded answer for every endpoint it declares, or says why not', () => {
        for (const endpoint of module.endpoints) {
          const recorded = RECORDED[module.slug]?.[endpoint] ?? [];
          const reason = NOT_RECORDED[module.slug]?.[endpoint];
          expect(recorded.length > 0 || reason !== undefined, `${module.slug} ${endpoint}`).to.equal(true);
        }
        const listed = [...Object.keys(RECORDED[module.slug] ?? {}), ...Object.keys(NOT_RECORDED[module.slug] ?? {})];
        expect(
          listed.filter((e) => !module.endpoints.includes(e as EndpointKey)),
          'listed but not declared',
        ).to.be.empty;
      });

      for (const [endpoint, answers] of Object.entries(RECORDED[module.slug] ?? {}) as [EndpointKey, Recorded[]][])
        for (const answer of answers)
          it(`${endpoint} (${answer.file}): path, key header, bytes and recorded usage`, async () => {
            const bytes = answerBytes(answer.file);
            const stream = isStream(answer.file);
            upstream.respondWith(() => ({
              status: 200,
              headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' },
              body: stream ? sseChunks(bytes) : bytes,
            }));
            const model = modelFor(module, bytes);
            const fields = endpoint === 'models' ? undefined : requestBody(endpoint, model, answer.request);
            const res = await send(gw, endpoint, { 'x-gateway-provider': module.slug, ...keyHeader(module) }, fields);

            expect(res.status, res.body.toString('utf8').slice(0, 300)).to.equal(200);
            expect(res.body.equals(bytes), 'the answer is relayed byte for byte').to.equal(true);
            const got = upstream.last();
            const basePath = new URL(module.baseUrl).pathname.replace(/\/$/, '');
            const path = module.paths?.[endpoint] ?? endpointByKey(endpoint).upstreamPath;
            expect(got.url.split('?')[0]).to.equal(`/${module.slug}${basePath}${path}`);
            expect(got.headers[module.auth.headers[0]]).to.equal(keyHeader(module)[module.auth.headers[0]]);
            expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gateway-'))).to.deep.equal([]);

            if (endpoint === 'models') return; // a provider's model list is passed through, nothing is recorded
            const record = await recordOf(gw, res.requestId);
            expect(record).to.include({ provider: module.slug, endpoint, status: 200, streamed: stream });
            expect(record.tags).to.include({ agent: 'contract' });
            const usage = parsedUsage(module, endpoint, answer.file);
            if (/"usage"\s*:\s*\{/.test(bytes.toString('utf8')))
              expect(usage, 'the answer reports usage: the parser must read it').to.not.equal(undefined);
            if (usage !== undefined) expect(pick(record)).to.deep.equal(buckets(usage));
          });

      for (const header of module.auth.headers.slice(1))
        it(`accepts the key in ${header} too, forwarded in the same header`, async () => {
          const endpoint = module.endpoints.find((e) => endpointByKey(e).body === 'json')!;
          const res = await send(
            gw,
            endpoint,
            { 'x-gateway-provider': module.slug, ...keyHeader(module, header) },
            {
              ...requestBody(endpoint, modelFor(module, Buffer.alloc(0))),
            },
          );
          expect(res.status).to.be.lessThan(500);
          expect(upstream.last().headers[header]).to.equal(keyHeader(module, header)[header]);
        });

      for (const prefix of module.modelPrefixes)
        it(`routes a model named ${prefix}… here without X-Gateway-Provider (unless a longer prefix wins)`, async () => {
          const model = `${prefix}contract`;
          const endpoint = module.endpoints.find((e) => endpointByKey(e).body === 'json')!;
          const owner = longestPrefixOwner(model)!;
          const ownerModule = BUILTIN_PROVIDERS[owner as keyof typeof BUILTIN_PROVIDERS] as ProviderModule;
          await send(gw, endpoint, keyHeader(ownerModule), requestBody(endpoint, model));
          expect(upstream.last().mount).to.equal(owner);
        });

      for (const endpoint of module.ownsEndpoints ?? [])
        if (endpointByKey(endpoint).modelField === undefined)
          it(`${endpoint} names no model: its path alone routes here`, async () => {
            await send(gw, endpoint, keyHeader(module), {});
            expect(upstream.last().mount).to.equal(module.slug);
          });
        else
          it(`${endpoint} is this provider's alone: another family's model there is refused, never sent on`, async () => {
            const res = await send(gw, endpoint, keyHeader(module), requestBody(endpoint, 'gpt-4o-mini'));
            expect(res.status, res.body.toString('utf8')).to.equal(400);
            expect(upstream.received).to.have.length(0);
          });

      it('refuses an endpoint it does not declare, before anything reaches the upstream', async () => {
        const other = (['chat.completions', 'messages', 'embeddings'] as EndpointKey[]).find(
          (e) => !module.endpoints.includes(e),
        )!;
        const res = await send(
          gw,
          other,
          { 'x-gateway-provider': module.slug, ...keyHeader(module) },
          requestBody(other, 'x'),
        );
        expect(res.status).to.equal(400);
        expect(JSON.parse(res.body.toString('utf8')).error.code).to.equal('endpoint_not_supported');
        expect(upstream.received).to.have.length(0);
      });
    });
  }
});
