/**
 * Audio and image prices (pricing/media-prices.json) merged into the bundled catalog. They live in their own file,
 * as tool fees do, because scripts/build-price-catalog.ts rewrites catalog.json; each names its source and date.
 * An entry adds its rates to the catalog model of the same provider and id (or adds the model), and the catalog's
 * notes that the source's audio, image, per-second or per-character fields were skipped give way for what it
 * now carries.
 */
import { z } from 'zod';
import mediaJson from './media-prices.json';
import {
  MEDIA_PRICE_FIELDS,
  mediaPriceSchema,
  type CatalogModel,
  type MediaPrice,
  type SkippedEntry,
} from './model-price';

/** Source field names (scripts/build-price-catalog.ts skips) that a media price now carries, by its field. */
const CARRIES: Record<string, (keyof MediaPrice)[]> = {
  'other_token_rates.input_audio_per_1m': ['input_audio'],
  'other_token_rates.output_audio_per_1m': ['output_audio'],
  'other_token_rates.input_image_token_per_1m': ['input_image'],
  'other_token_rates.output_image_token_per_1m': ['output_image'],
  non_token_pricing: ['per_second', 'per_character', 'per_image'],
};

const PRICE_KEYS = ['input', 'output', ...MEDIA_PRICE_FIELDS] as const;

export function bundledMediaPrices(): MediaPrice[] {
  return z.array(mediaPriceSchema).parse(mediaJson);
}

/** The catalog's models and skipped notes with the media prices merged in. */
export function withMediaPrices(
  models: readonly CatalogModel[],
  skipped: readonly SkippedEntry[],
  media: readonly MediaPrice[],
): { models: CatalogModel[]; skipped: SkippedEntry[] } {
  const out = models.map((m) => ({ ...m }));
  const carried = new Set<string>();
  const billedBy = new Map<string, string>();
  for (const p of media) {
    let entry = out.find((m) => m.provider === p.provider && m.model === p.model);
    if (!entry) out.push((entry = { provider: p.provider, model: p.model, kind: p.kind ?? 'audio' }));
    for (const k of PRICE_KEYS) if (p[k] !== undefined) (entry as Record<string, unknown>)[k] = p[k];
    if (p.aliases) entry.aliases = [...new Set([...(entry.aliases ?? []), ...p.aliases])];
    if (p.distinct_snapshots)
      entry.distinct_snapshots = [...new Set([...(entry.distinct_snapshots ?? []), ...p.distinct_snapshots])];
    const note = `audio/image prices: ${p.source}, retrieved ${p.retrieved}${p.note ? `; ${p.note}` : ''}`;
    entry.source_note = entry.source_note ? `${entry.source_note} | ${note}` : note;
    for (const [field, keys] of Object.entries(CARRIES)) {
      if (keys.some((k) => p[k] !== undefined)) carried.add(`${p.provider}\u0000${p.model}\u0000${field}`);
    }
    billedBy.set(`${p.provider}\u0000${p.model}`, unitOf(p));
  }
  return {
    models: out,
    skipped: skipped
      .filter((s) => !carried.has(`${s.provider}\u0000${s.model}\u0000${s.field}`))
      .map((s) => {
        const unit = billedBy.get(`${s.provider}\u0000${s.model}`);
        return unit && s.field in CARRIES ? { ...s, reason: `not used: the model is priced by ${unit}` } : s;
      }),
  };
}

/** The unit a media price bills by, in words. */
function unitOf(p: MediaPrice): string {
  if (p.per_second !== undefined) return 'the second of audio';
  if (p.per_character !== undefined) return 'the character';
  if (p.per_image !== undefined) return 'the image';
  return 'its usage tokens';
}
