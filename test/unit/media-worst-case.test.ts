import { expect } from 'chai';
import { GatewayContext } from '../../core/context';
import { endpointByKey } from '../../core/endpoints';
import type { EndpointKey } from '../../core/usage';
import { captureLogs } from '../../testing';
import { PriceCatalog } from '../../pricing/catalog';
import { RequestCost } from '../../services/request-cost';
import { mediaWorstCase } from '../../plugins/budget/media-worst-case';

/** The bundled catalog's prices, as the budget plugin reads them. */
const cost = new RequestCost(PriceCatalog.fromConfig({}));
/** USD per 1M tokens (or per unit) times a count, in pico-USD. */
const pico = (usd: string, times = 1): bigint => {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole + frac.padEnd(12, '0')) * BigInt(times);
};
const perMillion = (usd: string, tokens: number): bigint => pico(usd, tokens) / 1_000_000n;

/** A request as admission sees it: a JSON body, or a multipart form's fields and its size. */
function request(
  key: EndpointKey,
  model: string,
  body: { json?: Record<string, unknown>; form?: Record<string, string>; bodySize?: number },
): GatewayContext {
  const endpoint = endpointByKey(key);
  const ctx = new GatewayContext('id', 'POST', endpoint.path, endpoint, {}, captureLogs().logger);
  ctx.provider = { slug: 'openai' } as GatewayContext['provider'];
  ctx.model = model;
  ctx.json = body.json && { model, ...body.json };
  ctx.form = body.form && { model, ...body.form };
  ctx.bodySize = body.bodySize ?? Buffer.byteLength(JSON.stringify(ctx.json ?? {}));
  return ctx;
}
const reserve = (ctx: GatewayContext) => {
  const worst = mediaWorstCase(ctx, cost, { price: cost.prices.lookup('openai', ctx.model!)! });
  return 'pico' in worst ? worst.pico : worst;
};

describe('budget reservation of audio and images', () => {
  it('tts-1-hd: the code points of input', () => {
    expect(reserve(request('audio.speech', 'tts-1-hd', { json: { input: 'héllo 🦦' } }))).to.equal(pico('0.00003', 7));
  });

  it('dall-e-2 edits: n and size from the form fields', () => {
    const ctx = request('images.edits', 'dall-e-2', { form: { n: '3', size: '256x256' }, bodySize: 50_000 });
    expect(reserve(ctx)).to.equal(pico('0.016', 3));
  });

  it('dall-e-3 without size or quality: the API defaults, standard 1024x1024', () => {
    expect(reserve(request('images.generations', 'dall-e-3', { json: { prompt: 'x' } }))).to.equal(pico('0.04'));
  });

  it('gpt-image-1 with quality and size auto: n times the most output image tokens listed (6,240)', () => {
    const ctx = request('images.generations', 'gpt-image-1', { json: { prompt: 'x', n: 2, quality: 'auto' } });
    const text = Math.ceil(ctx.bodySize / 3);
    expect(reserve(ctx)).to.equal(perMillion('5', text) + perMillion('40', 2 * 6240));
  });

  it('gpt-4o-transcribe: the prompt as text and the catalog maximum output; the audio is not bounded', () => {
    const ctx = request('audio.transcriptions', 'gpt-4o-transcribe', {
      form: { prompt: 'otters' },
      bodySize: 1_000_000,
    });
    expect(reserve(ctx)).to.equal(perMillion('2.5', 6) + perMillion('10', 2000));
  });

  it('gpt-4o-mini-tts: the text input only; the audio it speaks is not bounded by the request', () => {
    // Its text input rate, $0.60 per 1M on OpenAI's model page (pricing/price-corrections.json).
    const ctx = request('audio.speech', 'gpt-4o-mini-tts', { json: { input: 'Hello there', voice: 'alloy' } });
    expect(reserve(ctx)).to.equal(perMillion('0.6', Math.ceil(ctx.bodySize / 3)));
  });

  it('whisper-1: an upload whose type is not known yet at 128 kbit/s', () => {
    const ctx = request('audio.transcriptions', 'whisper-1', { form: {}, bodySize: 160_000 });
    expect(reserve(ctx)).to.equal(pico('0.0001', 10));
  });
});
