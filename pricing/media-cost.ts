/**
 * Audio and images: which unit a model's answer is billed by, from its price.
 *
 *   per_second     seconds of audio (whisper-1): Usage.audioSeconds
 *   per_character  characters of text to speak (tts-1, tts-1-hd): Usage.inputCharacters
 *   per_image      images by "quality/size" (dall-e-2, dall-e-3): Usage.images x the image's price
 *   otherwise      the usage tokens the answer carries (gpt-image-*, gpt-4o-transcribe, gpt-4o-mini-tts): text,
 *                  image and audio tokens each at their own rate (pricing/cost.ts)
 *
 * An answer without the unit its model is billed by (a speech answer of raw audio bytes carries no usage) cannot be
 * measured: it is not counted, and shown as such, never as $0.
 */
import type { Usage } from '../core/usage';
import type { ModelPrice } from './model-price';
import { rateFromUsd, type Rate } from './money';

type Line = [units: number | undefined, rate: Rate | undefined, name: string];

const TOKEN_UNITS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'inputImageTokens',
  'outputImageTokens',
  'inputAudioTokens',
  'outputAudioTokens',
] as const;

/** OpenAI's documented defaults for DALL·E: a request without size or quality (or with "auto") gets these. */
const DEFAULT_QUALITY = 'standard';
const DEFAULT_SIZE = '1024x1024';

/**
 * The part of an audio or image usage its price bills, or undefined when the answer and the request measured
 * none of it (not counted). Without a price, any measured unit is kept: the cost is then unknown (unpriced).
 */
export function billedMediaUsage(price: ModelPrice | undefined, usage: Usage | undefined): Usage | undefined {
  if (!usage) return undefined;
  const tokens = (): Usage | undefined => {
    const out: Usage = {};
    for (const f of TOKEN_UNITS) if (usage[f] !== undefined) out[f] = usage[f];
    return Object.keys(out).length > 0 ? out : undefined;
  };
  if (!price) {
    const measured = usage.audioSeconds ?? usage.inputCharacters ?? usage.images;
    return measured !== undefined ? usage : tokens();
  }
  if (price.per_second !== undefined)
    return usage.audioSeconds === undefined ? undefined : { audioSeconds: usage.audioSeconds };
  if (price.per_character !== undefined)
    return usage.inputCharacters === undefined ? undefined : { inputCharacters: usage.inputCharacters };
  if (price.per_image !== undefined) {
    if (usage.images === undefined) return undefined;
    return { images: usage.images, imageSize: usage.imageSize, imageQuality: usage.imageQuality };
  }
  return tokens();
}

/** The non-token lines of a media usage (seconds, characters, images), or why they cannot be priced. */
export function mediaUnitLines(price: ModelPrice, usage: Usage): Line[] | string {
  const lines: Line[] = [
    [usage.audioSeconds, price.per_second === undefined ? undefined : rateFromUsd(price.per_second), 'per_second'],
    [
      usage.inputCharacters,
      price.per_character === undefined ? undefined : rateFromUsd(price.per_character),
      'per_character',
    ],
  ];
  if (usage.images) {
    const quality = usage.imageQuality && usage.imageQuality !== 'auto' ? usage.imageQuality : DEFAULT_QUALITY;
    const size = usage.imageSize && usage.imageSize !== 'auto' ? usage.imageSize : DEFAULT_SIZE;
    const usd = price.per_image?.[`${quality}/${size}`];
    if (usd === undefined) return `${price.provider}/${price.model} has no price for a ${quality} ${size} image`;
    lines.push([usage.images, rateFromUsd(usd), 'per_image']);
  }
  return lines;
}
