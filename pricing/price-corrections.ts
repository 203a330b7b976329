/**
 * Deliberate differences between the bundled catalog and the LiteLLM snapshot it is built from
 * (pricing/source/prices.yaml): rates a provider publishes otherwise. Each names the snapshot's value it replaces
 * (null: the snapshot has none), the price in force and where that price was read. They live in their own file
 * because scripts/build-price-catalog.ts rewrites catalog.json; test/unit/catalog-sources.test.ts checks that every
 * bundled rate is the snapshot's, a media price's (pricing/media-prices.json, each with its source) or one of these.
 */
import { z } from 'zod';
import correctionsJson from './price-corrections.json';
import { decimalString, type CatalogModel } from './model-price';

/** The flat rate fields a correction may set (USD per 1M tokens). */
export const CORRECTABLE_FIELDS = [
  'input',
  'output',
  'cache_read',
  'cache_write',
  'cache_write_1h',
  'input_audio',
  'output_audio',
  'input_image',
  'output_image',
] as const;

export const priceCorrectionSchema = z.strictObject({
  provider: z.string().min(1),
  model: z.string().min(1),
  field: z.enum(CORRECTABLE_FIELDS),
  /** The snapshot's value of the field, or null when it has none. */
  snapshot: decimalString.nullable(),
  price: decimalString,
  source: z.string().min(20),
  retrieved: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  note: z.string().optional(),
});
export type PriceCorrection = z.infer<typeof priceCorrectionSchema>;

export function bundledCorrections(): PriceCorrection[] {
  return z.array(priceCorrectionSchema).parse(correctionsJson);
}

/** The models with each correction applied and named in the entry's source note; a correction without its entry throws. */
export function withCorrections(
  models: readonly CatalogModel[],
  corrections: readonly PriceCorrection[],
): CatalogModel[] {
  const out = models.map((m) => ({ ...m }));
  for (const c of corrections) {
    const entry = out.find((m) => m.provider === c.provider && m.model === c.model);
    if (!entry) throw new Error(`price correction for ${c.provider}/${c.model}: no such catalog entry`);
    entry[c.field] = c.price;
    const note = `${c.field} ${c.price} (snapshot: ${c.snapshot ?? 'none'}): ${c.source}, retrieved ${c.retrieved}`;
    entry.source_note = entry.source_note ? `${entry.source_note} | ${note}` : note;
  }
  return out;
}
