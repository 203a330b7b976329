import {
  countCodePoints,
  requestedImages,
  typicalSeconds,
  type GatewayContext,
  type RequestCostService,
  type Usage,
} from '../../api';
import type { BudgetPrice, ModelPrice } from './unpriced';
import { bounded, unbounded, type WorstCase } from './worst-case-bound';

/**
 * Output image tokens of one gpt-image image by quality and size, as OpenAI's image generation guide lists them
 * ("Cost and latency"); the catalog's per-image prices of gpt-image-1 ($0.011, $0.042, $0.167 for 1024x1024 at $40
 * per 1M output image tokens) agree with them. The other gpt-image models are reserved by the same figures.
 */
const IMAGE_OUTPUT_TOKENS: Readonly<Record<string, number>> = {
  'low/1024x1024': 272,
  'low/1024x1536': 408,
  'low/1536x1024': 400,
  'medium/1024x1024': 1056,
  'medium/1024x1536': 1584,
  'medium/1536x1024': 1568,
  'high/1024x1024': 4160,
  'high/1024x1536': 6240,
  'high/1536x1024': 6208,
};
/** An image whose quality or size is auto, absent or not in the table: the most any listed one produces. */
const MOST_IMAGE_OUTPUT_TOKENS = Math.max(...Object.values(IMAGE_OUTPUT_TOKENS));
/** Text input estimated from the body size, as for chat (worst-case.ts): ~3 bytes a token. */
const BYTES_PER_TOKEN = 3;

/**
 * What admission reserves for an audio or image request, priced by the unit its model is billed by
 * (pricing/media-cost.ts), from what the request says:
 * - per character (tts-1): the characters of `input`, exact;
 * - per image (dall-e): `n` (default 1) images of the size and quality asked for (the API's defaults when
 *   absent), exact;
 * - per second (whisper-1): the upload's size at the typical bitrate of its type, an estimate;
 * - tokens (gpt-image, gpt-4o-*-transcribe, gpt-4o-mini-tts): text input from a JSON body's size, or an upload's
 *   `prompt` (in bytes); for images `n` times
 *   the output image tokens of the quality and size asked for; for transcriptions the model's maximum output
 *   from the catalog. Input images, input audio and the audio gpt-4o-mini-tts speaks are not bounded by the
 *   request and are not reserved (docs/limits.md lists them as overshoot).
 * A request whose units cannot be read (an `input` that is not text, an `n` that is not a positive whole number, a
 * `size` or `quality` that is not text) or that the price does not cover (a DALL·E size it does not list) is
 * unbounded: the budget cannot tell what it will cost.
 */
export function mediaWorstCase(ctx: GatewayContext, cost: RequestCostService, priced: BudgetPrice): WorstCase {
  const usage = mediaWorstCaseUsage(ctx, priced.price);
  if ('unbounded' in usage) return usage;
  const worst = cost.price(ctx, usage, priced.standIn);
  if (worst.costPico !== null) return bounded(worst.costPico);
  return unbounded(worst.reason ?? 'no price for its units', unpricedImageField(priced.price, usage.imageSize));
}

/** The field a DALL·E price lacks: the size when no quality lists it, else the quality. */
function unpricedImageField(price: ModelPrice, size: string | undefined): string | null {
  if (!price.per_image) return null;
  const asked = size && size !== 'auto' ? size : '1024x1024';
  return Object.keys(price.per_image).some((k) => k.endsWith(`/${asked}`)) ? 'quality' : 'size';
}

function mediaWorstCaseUsage(
  ctx: GatewayContext,
  price: ModelPrice,
): Usage | Extract<WorstCase, { unbounded: string }> {
  const fields: Record<string, unknown> = ctx.json ?? ctx.form ?? {};
  const key = ctx.endpoint?.key;
  if (price.per_character !== undefined) {
    const input = fields.input;
    if (typeof input !== 'string') return unbounded('"input" is not a text to count the characters of', 'input');
    return { inputCharacters: countCodePoints(input) };
  }
  if (price.per_second !== undefined) return { audioSeconds: typicalSeconds(ctx.uploadHead?.(), ctx.bodySize) };
  const isImage = key?.startsWith('images.') === true;
  const n = isImage ? requestedImages(fields.n) : 0;
  if (n === undefined) return unbounded('"n" is not a positive whole number of images', 'n');
  for (const field of ['size', 'quality'] as const) {
    const v = fields[field];
    if (isImage && v !== undefined && v !== null && typeof v !== 'string') {
      return unbounded(`"${field}" is not a text`, field);
    }
  }
  const images = n;
  const size = typeof fields.size === 'string' ? fields.size : undefined;
  const quality = typeof fields.quality === 'string' ? fields.quality : undefined;
  if (price.per_image !== undefined) return { images, imageSize: size, imageQuality: quality };
  // An upload's text is its prompt (each token at least a byte); the file's bytes are not text.
  const prompt = ctx.form?.prompt;
  const textTokens = ctx.json ? ctx.bodySize / BYTES_PER_TOKEN : prompt ? Buffer.byteLength(prompt) : 0;
  const usage: Usage = { inputTokens: Math.ceil(textTokens) };
  if (images > 0) {
    usage.outputImageTokens = images * (IMAGE_OUTPUT_TOKENS[`${quality}/${size}`] ?? MOST_IMAGE_OUTPUT_TOKENS);
  } else if (key === 'audio.transcriptions' || key === 'audio.translations') {
    if (price.max_output_tokens !== undefined) usage.outputTokens = price.max_output_tokens;
  }
  return usage;
}
