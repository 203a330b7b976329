import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import OpenAI, { toFile } from 'openai';
import { request } from 'undici';
import { waitForRecord } from '../framework/helpers';
import { adminGet } from '../helpers/admin';
import { fixtureBytes, fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import {
  OPENAI_KEY,
  startTestGateway,
  TEST_ADMIN_TOKEN,
  type TestGateway,
  useGateway,
  workspaceWith,
  openaiClient,
} from '../helpers/gateway';
import { sseChunks, TestUpstream, type Reply } from '../helpers/upstream';

/**
 * The audio and image prices as committed (pricing/media-prices.json), with the corrections of
 * pricing/price-corrections.json over them: the expected costs are computed from them.
 */
const MEDIA_PRICES: Record<string, any>[] = JSON.parse(
  readFileSync(`${PROJECT_ROOT}/pricing/media-prices.json`, 'utf8'),
);
const CORRECTIONS: { provider: string; model: string; field: string; price: string }[] = JSON.parse(
  readFileSync(`${PROJECT_ROOT}/pricing/price-corrections.json`, 'utf8'),
);
function priceOf(model: string): Record<string, any> {
  const p = { ...MEDIA_PRICES.find((m) => m.provider === 'openai' && m.model === model)! };
  for (const c of CORRECTIONS) if (c.provider === 'openai' && c.model === model) p[c.field] = c.price;
  return p;
}

/** An exact USD decimal as pico-dollars ("0.0001" -> 100000000n). */
function pico(usd: string): bigint {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole + frac.padEnd(12, '0'));
}
/** Tokens at a rate in USD per 1M tokens, in pico-dollars (every rate here is a whole number of pico per token). */
function tokensAt(tokens: number, perMillion: string): bigint {
  const perToken = pico(perMillion) / 1_000_000n;
  expect(perToken * 1_000_000n, `${perMillion} per 1M is whole pico per token`).to.equal(pico(perMillion));
  return BigInt(tokens) * perToken;
}

const json = (file: string): Reply => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: fixtureBytes(file),
});
const sse = (file: string): Reply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream; charset=utf-8' },
  body: sseChunks(fixtureBytes(file)),
});
const text = (body: string): Reply => ({
  status: 200,
  headers: { 'content-type': 'text/plain; charset=utf-8' },
  body: Buffer.from(body),
});

/** A short real WAV (a 440 Hz tone, 2.2 s of 8 kHz 16-bit mono: 17,600 samples), made for these tests. */
const WAV = fixtureBytes('audio/tone_2200ms_8khz.wav');
const WAV_SECONDS = Math.ceil(17_600 / 8_000);

/**
 * Audio and images priced through the gateway with the official SDK, against recorded answers (and answers built
 * from OpenAI's API reference where no recording exists): each record's cost is the hand-computed price.
 */
describe('audio and images: priced by the unit each model is billed by', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const client = () => openaiClient(gw);
  const recordOf = (res: Response) => waitForRecord(gw, res.headers.get('x-gateway-request-id'));
  const expectCost = (record: any, cost: bigint, provenance = 'measured') => {
    expect(record.provenance, JSON.stringify(record)).to.equal(provenance);
    expect(record.cost_pico).to.equal(cost.toString());
  };

  describe('images', () => {
    it('gpt-image-1: text input, image input and image output tokens, each at its rate', async () => {
      upstream.respondWith(() => json('openai/images_generations_docs_example.json'));
      const res = await client().images.generate({ model: 'gpt-image-1', prompt: 'An otter' }).asResponse();
      expect(Buffer.from(await res.arrayBuffer()).equals(fixtureBytes('openai/images_generations_docs_example.json')))
        .to.be.true;
      const usage = fixtureJson('openai/images_generations_docs_example.json').usage;
      const p = priceOf('gpt-image-1');
      const record = await recordOf(res);
      expectCost(
        record,
        tokensAt(usage.input_tokens_details.text_tokens, p.input) +
          tokensAt(usage.input_tokens_details.image_tokens, p.input_image) +
          tokensAt(usage.output_tokens, p.output_image),
      );
      expect(record.input_tokens).to.equal(usage.input_tokens);
      expect(record.output_tokens).to.equal(usage.output_tokens);
    });

    it('gpt-image-1-mini: the same usage at its own rates', async () => {
      upstream.respondWith(() => json('openai/images_generations_docs_example.json'));
      const res = await client().images.generate({ model: 'gpt-image-1-mini', prompt: 'An otter' }).asResponse();
      const usage = fixtureJson('openai/images_generations_docs_example.json').usage;
      const p = priceOf('gpt-image-1-mini');
      expectCost(
        await recordOf(res),
        tokensAt(10, p.input) + tokensAt(40, p.input_image) + tokensAt(usage.output_tokens, p.output_image),
      );
    });

    it('dall-e-3: one image at the price of its size and quality', async () => {
      upstream.respondWith(() => json('openai/images_generations.json'));
      const res = await client()
        .images.generate({ model: 'dall-e-3', prompt: 'An otter', size: '1792x1024', quality: 'hd' })
        .asResponse();
      expectCost(await recordOf(res), pico(priceOf('dall-e-3').per_image['hd/1792x1024']));
    });

    it('dall-e-2: n images at the price of their size, n as the answer shows it', async () => {
      upstream.respondWith(() => json('openai/images_generations_two_built.json'));
      const two = await client()
        .images.generate({ model: 'dall-e-2', prompt: 'An otter', n: 2, size: '512x512' })
        .asResponse();
      expectCost(await recordOf(two), 2n * pico(priceOf('dall-e-2').per_image['standard/512x512']));

      // Asked for three, given one (the recorded answer): one image is billed; no size means 1024x1024.
      upstream.respondWith(() => json('openai/images_generations.json'));
      const one = await client().images.generate({ model: 'dall-e-2', prompt: 'An otter', n: 3 }).asResponse();
      expectCost(await recordOf(one), pico(priceOf('dall-e-2').per_image['standard/1024x1024']));
    });

    it('an image size the price does not list is unpriced, never $0', async () => {
      upstream.respondWith(() => json('openai/images_generations.json'));
      const res = await client()
        .images.generate({ model: 'dall-e-2', prompt: 'An otter', size: '1792x1024' as any })
        .asResponse();
      const record = await recordOf(res);
      expect(record.provenance).to.equal('unpriced');
      expect(record.cost_pico).to.equal(null);
    });
  });

  describe('speech', () => {
    const input = 'Tollgate counts every character — even ü, ß and ✓.';

    for (const model of ['tts-1', 'tts-1-hd']) {
      it(`${model}: per character of the input`, async () => {
        const res = await client().audio.speech.create({ model, voice: 'alloy', input });
        await res.arrayBuffer();
        expectCost(await recordOf(res), BigInt([...input].length) * pico(priceOf(model).per_character));
      });
    }

    it('gpt-4o-mini-tts streamed as SSE: text input and audio output tokens from its speech.audio.done event', async () => {
      upstream.respondWith(() => sse('openai/speech_stream_built.sse'));
      const res = await client().audio.speech.create({
        model: 'gpt-4o-mini-tts',
        voice: 'alloy',
        input,
        stream_format: 'sse',
      });
      expect(Buffer.from(await res.arrayBuffer()).equals(fixtureBytes('openai/speech_stream_built.sse'))).to.be.true;
      const p = priceOf('gpt-4o-mini-tts');
      expectCost(await recordOf(res), tokensAt(14, p.input) + tokensAt(101, p.output_audio));
    });

    it('gpt-4o-mini-tts answered with raw audio: nothing to price it by, not counted', async () => {
      const res = await client().audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input });
      await res.arrayBuffer();
      const record = await recordOf(res);
      expect(record.provenance).to.equal('not_counted');
      expect(record.cost_pico).to.equal(null);
    });
  });

  describe('transcriptions', () => {
    const file = () => toFile(WAV, 'tone.wav', { type: 'audio/wav' });

    it('gpt-4o-transcribe: audio input and text output tokens', async () => {
      upstream.respondWith(() => json('openai/audio_transcription_docs_example.json'));
      const res = await client()
        .audio.transcriptions.create({ model: 'gpt-4o-transcribe', file: await file() })
        .asResponse();
      const usage = fixtureJson('openai/audio_transcription_docs_example.json').usage;
      const p = priceOf('gpt-4o-transcribe');
      expectCost(
        await recordOf(res),
        tokensAt(usage.input_token_details.text_tokens, p.input) +
          tokensAt(usage.input_token_details.audio_tokens, p.input_audio) +
          tokensAt(usage.output_tokens, p.output),
      );
    });

    it('gpt-4o-mini-transcribe streamed: the usage of its transcript.text.done event', async () => {
      upstream.respondWith(() => sse('openai/transcription_stream_built.sse'));
      const { data: stream, response } = await client()
        .audio.transcriptions.create({ model: 'gpt-4o-mini-transcribe', file: await file(), stream: true })
        .withResponse();
      let done: any;
      for await (const event of stream) if (event.type === 'transcript.text.done') done = event;
      expect(done.usage.output_tokens).to.equal(31);
      const id = response.headers.get('x-gateway-request-id');
      const p = priceOf('gpt-4o-mini-transcribe');
      expectCost(
        await waitForRecord(gw, id),
        tokensAt(10, p.input) + tokensAt(4, p.input_audio) + tokensAt(31, p.output),
      );
    });

    it('whisper-1 verbose_json: the seconds its usage reports (36.71 s of audio billed as 37)', async () => {
      upstream.respondWith(() => json('openai/audio_transcription_verbose_json.json'));
      const res = await client()
        .audio.transcriptions.create({ model: 'whisper-1', file: await file(), response_format: 'verbose_json' })
        .asResponse();
      expect(fixtureJson('openai/audio_transcription_verbose_json.json').usage.seconds).to.equal(37);
      expectCost(await recordOf(res), 37n * pico(priceOf('whisper-1').per_second));
    });

    it('whisper-1 verbose_json without usage: its duration, rounded up to the second', async () => {
      const { usage: _, ...answer } = fixtureJson('openai/audio_transcription_verbose_json.json');
      upstream.respondWith(() => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify(answer)),
      }));
      const res = await client()
        .audio.translations.create({ model: 'whisper-1', file: await file(), response_format: 'verbose_json' })
        .asResponse();
      const record = await recordOf(res);
      expect(record.endpoint).to.equal('audio.translations');
      expectCost(record, BigInt(Math.ceil(answer.duration)) * pico(priceOf('whisper-1').per_second));
    });

    it('whisper-1 answering in text: the duration read from the WAV header of the upload', async () => {
      upstream.respondWith(() => text('I see skies of blue.\n'));
      const res = await client()
        .audio.transcriptions.create({ model: 'whisper-1', file: await file(), response_format: 'text' })
        .asResponse();
      expect(await res.text()).to.equal('I see skies of blue.\n');
      expectCost(await recordOf(res), BigInt(WAV_SECONDS) * pico(priceOf('whisper-1').per_second));
    });

    it('whisper-1 with an upload whose header is unreadable: estimated from its size, marked estimated', async () => {
      upstream.respondWith(() => text('…'));
      const noise = Buffer.alloc(48_000, 0x5a);
      const res = await client()
        .audio.transcriptions.create({
          model: 'whisper-1',
          file: await toFile(noise, 'speech.mp3', { type: 'audio/mpeg' }),
          response_format: 'text',
        })
        .asResponse();
      await res.text();
      // A typical MP3 bitrate, 128 kbit/s, over the bytes of the upload.
      const seconds = Math.ceil((upstream.last().body.length * 8) / 128_000);
      expectCost(await recordOf(res), BigInt(seconds) * pico(priceOf('whisper-1').per_second), 'estimated');
    });
  });

  it('a /api/usage group made only of audio not counted shows "not counted", not a known $0', async () => {
    // gpt-4o-mini-tts answered with raw audio: priced by tokens, but the answer carries none.
    const speak = async (model: string, batch: string) => {
      const res = await client().audio.speech.create(
        { model, voice: 'alloy', input: 'Counted?' },
        { headers: { 'X-Gateway-Metadata-Batch': batch } },
      );
      await res.arrayBuffer();
      return recordOf(res);
    };
    for (let i = 0; i < 2; i++) expect((await speak('gpt-4o-mini-tts', 'silent')).provenance).to.equal('not_counted');
    const only = await adminGet(gw, '/api/usage?group_by=batch&filter[batch]=silent');
    expect(only.rows).to.have.length(1);
    expect(only.rows[0]).to.include({
      requests: 2,
      not_counted_count: 2,
      unpriced_count: 0,
      cost_status: 'not_counted',
      cost_usd: null,
      cost_pico: null,
    });
    expect(only.total).to.include({ cost_status: 'not_counted', cost_usd: null });

    // Beside a counted record the cost is a lower bound: the known part, and how many records it leaves out.
    await speak('gpt-4o-mini-tts', 'mixed');
    expect((await speak('tts-1', 'mixed')).provenance).to.equal('measured');
    const mixed = (await adminGet(gw, '/api/usage?group_by=batch&filter[batch]=mixed')).rows[0];
    expect(mixed).to.include({ requests: 2, not_counted_count: 1, cost_status: 'lower_bound' });
    expect(mixed.cost_pico).to.equal((BigInt('Counted?'.length) * pico(priceOf('tts-1').per_character)).toString());

    const csv = await request(`${gw.adminUrl}/api/usage.csv?group_by=batch&filter[batch]=silent`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    const [header, line] = (await csv.body.text()).split('\r\n');
    const cells = Object.fromEntries(header.split(',').map((k, i) => [k, line.split(',')[i]]));
    expect(cells).to.include({ cost_usd: '', cost_status: 'not_counted', not_counted_count: '2' });
  });
});

/** Uploads received into the spool file or streaming through it: the duration is read from the same header bytes. */
describe('whisper-1 duration from a spooled or streamed-through upload', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g), 'server: { upload_spool_from: 4kb }');
  const perSecond = pico(priceOf('whisper-1').per_second);

  const send = async (order: 'file first' | 'fields first') => {
    upstream.respondWith(() => text('tone'));
    const data = new FormData();
    const addFile = () => data.append('file', new Blob([new Uint8Array(WAV)], { type: 'audio/wav' }), 'tone.wav');
    if (order === 'file first') addFile();
    data.append('model', 'whisper-1');
    data.append('response_format', 'text');
    if (order === 'fields first') addFile();
    const encoded = new Request('http://x', { method: 'POST', body: data });
    const res = await request(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: {
        'x-gateway-key': gw.key,
        authorization: `Bearer ${OPENAI_KEY}`,
        'content-type': encoded.headers.get('content-type')!,
      },
      body: Buffer.from(await encoded.arrayBuffer()),
    });
    expect(res.statusCode).to.equal(200);
    expect(await res.body.text()).to.equal('tone');
    expect(upstream.last().body.includes(WAV), 'the file arrived unchanged').to.equal(true);
    return waitForRecord(gw, res.headers['x-gateway-request-id']);
  };

  for (const order of ['file first', 'fields first'] as const) {
    it(`${order}: ${WAV_SECONDS} s from the WAV header, measured`, async () => {
      const record = await send(order);
      expect(record.provenance).to.equal('measured');
      expect(record.cost_pico).to.equal((BigInt(WAV_SECONDS) * perSecond).toString());
    });
  }
});

/** A budget counts audio and images at the price they are recorded at: they are no way around a limit. */
describe('budgets count audio and images', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url, workspaceWith(`{ budgets: [{ period: day, usd: "0.001" }] }`));
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  const speak = (input: string) =>
    openaiClient(gw)
      .audio.speech.create({ model: 'tts-1', voice: 'alloy', input })
      .then(async (res) => (await res.arrayBuffer(), res));

  it('tts-1 spend reaches /api/budgets at its recorded cost, and the next request over budget is refused', async () => {
    upstream.respondWith(() => ({ status: 200, headers: { 'content-type': 'audio/mpeg' }, body: Buffer.from('ID3') }));
    const input = 'x'.repeat(60); // 60 characters at $15 per 1M: $0.0009 of the $0.001 budget
    const record = await waitForRecord(gw, (await speak(input)).headers.get('x-gateway-request-id'));
    const cost = BigInt(input.length) * pico(priceOf('tts-1').per_character);
    expect(record.cost_pico).to.equal(cost.toString());
    let spent = '';
    for (let i = 0; i < 50 && spent !== '0.0009'; i++) {
      spent = (await adminGet(gw, '/api/budgets')).data[0].spent_usd;
      if (spent !== '0.0009') await new Promise((r) => setTimeout(r, 20));
    }
    expect(spent).to.equal('0.0009');
    // 7 characters ($0.000105) no longer fit: refused at admission.
    const refused = await speak('y'.repeat(7)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).to.be.instanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).code).to.equal('budget_exceeded');
  });
});
