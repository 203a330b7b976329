import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { toFile } from 'openai';
import { settledBudget } from '../helpers/admin';
import { fixtureBytes, PROJECT_ROOT } from '../helpers/fixtures';
import { startTestGateway, type TestGateway, useGatewayPerTest, workspaceWith, openaiClient } from '../helpers/gateway';
import { TestUpstream, type Reply } from '../helpers/upstream';

const MEDIA_PRICES: Record<string, any>[] = JSON.parse(
  readFileSync(`${PROJECT_ROOT}/pricing/media-prices.json`, 'utf8'),
);
const priceOf = (model: string) => MEDIA_PRICES.find((p) => p.provider === 'openai' && p.model === model)!;
/** An exact USD decimal as pico-dollars. */
const pico = (usd: string): bigint => {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole + frac.padEnd(12, '0'));
};
/** Tokens at a rate in USD per 1M tokens, in pico-dollars (whole pico per token for every rate used here). */
const tokensAt = (tokens: number, perMillion: string): bigint => (BigInt(tokens) * pico(perMillion)) / 1_000_000n;

/**
 * Audio and image requests hold a reservation at admission like chat does, so concurrent requests cannot spend past
 * a budget. Each batch is sent at once by the official openai SDK to a loopback provider that answers after 300 ms
 * (every request is admitted or refused while the others are still open); the spend is read from /api/budgets.
 */
describe('budgets reserve audio and images at admission', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGatewayPerTest(upstream, () => gw);

  const start = async (usd: string) => {
    gw = await startTestGateway(upstream.url, workspaceWith(`{ budgets: [{ period: day, usd: "${usd}" }] }`));
  };
  const client = () => openaiClient(gw);

  /**
   * `count` requests at once, the provider answering `reply` to each only once every one of them reached it or was
   * refused (so none settles while another is admitted): how many were answered, that the rest were refused for
   * the budget, and the spend once all settled.
   */
  async function batch(
    count: number,
    reply: Reply,
    send: () => Promise<unknown>,
  ): Promise<{ ok: number; spent: bigint }> {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let decided = 0;
    const decide = () => {
      if (++decided === count) open();
    };
    upstream.respondWith(() => {
      decide();
      return { ...reply, until: gate };
    });
    const one = () =>
      send().then(
        () => 'ok',
        (err: unknown) => {
          decide();
          return `${(err as { status?: number }).status} ${(err as { code?: string }).code}`;
        },
      );
    const sentBefore = upstream.received.length;
    const outcomes = await Promise.all(Array.from({ length: count }, one));
    for (const o of outcomes) expect(o).to.be.oneOf(['ok', '429 budget_exceeded']);
    const budget = await settledBudget(gw);
    const ok = outcomes.filter((o) => o === 'ok').length;
    expect(upstream.received, 'only admitted requests reach the provider').to.have.length(sentBefore + ok);
    return { ok, spent: pico(String(budget.spent_usd)) };
  }

  it('tts-1: the characters of `input` are reserved exactly; 2 of 20 fit a $0.001 budget', async () => {
    await start('0.001');
    const reply = { headers: { 'content-type': 'audio/mpeg' }, body: Buffer.from('ID3 not really audio') };
    const input = 'Thirty characters, every one.';
    expect([...input]).to.have.length(29);
    const text = `${input}é`; // 30 code points, 31 bytes: characters are counted, not bytes
    const each = 30n * pico(priceOf('tts-1').per_character); // $0.00045
    const r = await batch(20, reply, async () => {
      const res = await client().audio.speech.create({ model: 'tts-1', voice: 'alloy', input: text });
      await res.arrayBuffer();
    });
    expect(r.ok).to.equal(Number(pico('0.001') / each));
    expect(r.ok).to.equal(2);
    expect(r.spent).to.equal(2n * each);
  });

  it('dall-e-2: n images of the size asked for are reserved exactly', async () => {
    await start('0.1');
    const reply: Reply = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/images_generations_two_built.json'),
    };
    const each = 2n * pico(priceOf('dall-e-2').per_image['standard/512x512']); // $0.036
    const r = await batch(10, reply, () =>
      client().images.generate({ model: 'dall-e-2', prompt: 'An otter', n: 2, size: '512x512' }),
    );
    expect(r.ok).to.equal(2);
    expect(r.spent).to.equal(2n * each);
  });

  it('dall-e-3: the size and quality asked for; without them the API defaults (standard 1024x1024)', async () => {
    await start('0.3');
    const reply: Reply = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/images_generations.json'),
    };
    const hd = pico(priceOf('dall-e-3').per_image['hd/1792x1024']); // $0.12
    const r = await batch(6, reply, () =>
      client().images.generate({ model: 'dall-e-3', prompt: 'An otter', size: '1792x1024', quality: 'hd' }),
    );
    expect(r.ok).to.equal(2);
    expect(r.spent).to.equal(2n * hd);
    // $0.06 left: one default image ($0.04) fits, a second does not.
    const defaults = await batch(4, reply, () => client().images.generate({ model: 'dall-e-3', prompt: 'An otter' }));
    expect(defaults.ok).to.equal(1);
    expect(defaults.spent).to.equal(2n * hd + pico(priceOf('dall-e-3').per_image['standard/1024x1024']));
  });

  it('gpt-image-1: reserves the output image tokens of the quality and size asked for; settles at the usage', async () => {
    await start('0.4');
    const reply: Reply = {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/images_generations_docs_example.json'),
    };
    const p = priceOf('gpt-image-1');
    // high 1024x1024: 4,160 output image tokens ($0.1664) plus the prompt's few tokens: two fit in $0.40.
    const r = await batch(6, reply, () =>
      client().images.generate({ model: 'gpt-image-1', prompt: 'An otter', size: '1024x1024', quality: 'high' }),
    );
    expect(r.ok).to.equal(2);
    const actual = tokensAt(10, p.input) + tokensAt(40, p.input_image) + tokensAt(50, p.output_image);
    expect(r.spent).to.equal(2n * actual);
  });

  it('whisper-1: seconds estimated from the upload size at a typical bitrate; a low-bitrate WAV overshoots by the rest', async () => {
    // 2.2 s of 8 kHz 16-bit mono (128 kbit/s), billed as 3 s; a WAV is estimated at 256 kbit/s.
    await start('0.0005');
    const wav = fixtureBytes('audio/tone_2200ms_8khz.wav');
    const perSecond = pico(priceOf('whisper-1').per_second);
    const reply = { headers: { 'content-type': 'text/plain' }, body: Buffer.from('tone') };
    const r = await batch(6, reply, async () =>
      client().audio.transcriptions.create({
        model: 'whisper-1',
        file: await toFile(wav, 'tone.wav', { type: 'audio/wav' }),
        response_format: 'text',
      }),
    );
    const uploadBytes = upstream.received[0].body.length;
    const reserved = BigInt(Math.ceil((uploadBytes * 8) / 256_000)) * perSecond;
    expect(reserved, 'the estimate is below the 3 s billed').to.equal(2n * perSecond);
    expect(r.ok).to.equal(Number(pico('0.0005') / reserved));
    expect(r.spent).to.equal(BigInt(r.ok) * 3n * perSecond);
    // The overshoot is what docs/limits.md bounds it by: the seconds beyond the estimate, per admitted request.
    expect(r.spent > pico('0.0005'), 'it does overshoot').to.equal(true);
    expect(r.spent - pico('0.0005') <= BigInt(r.ok) * (3n * perSecond - reserved)).to.equal(true);
  });
});
