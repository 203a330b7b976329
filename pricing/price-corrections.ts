/**
 * Deliberate differences between the bundled catalog and the LiteLLM snapshot it is built from
 * (pricing/source/prices.yaml): rates a provider publishes otherwise. A correction sets one flat rate (`field`) or
 * the rates of one service tier (`tier`, e.g. Anthropic's batch rates, which the snapshot lacks); each names the
 * snapshot's value it replaces (null: the snapshot has none), the price in force and where that price was read.
 * They live in their own file because scripts/build-price-catalog.ts rewrites catalog.json, and stay applied to an
 * imported catalog (`tollgate prices update`) while it still holds the value they replace (correctedImport);
 * test/unit/catalog-sources.test.ts checks that every bundled rate is the snapshot's, a media price's
 * (pricing/media-prices.json, each with its source) or one of these.
 */
import { z } from 'zod';
import correctionsJson from './price-corrections.json';
import { decimalString, serviceTierSchema, type CatalogModel } from './model-price';

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

/** Where a corrected price was read. */
const provenance = {
  provider: z.string().min(1),
  model: z.string().min(1),
  source: z.string().min(20),
  retrieved: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  note: z.string().optional(),
};

const rateCorrectionSchema = z.strictObject({
  ...provenance,
  field: z.enum(CORRECTABLE_FIELDS),
  /** The snapshot's value of the field, or null when it has none. */
  snapshot: decimalString.nullable(),
  price: decimalString,
});

const tierCorrectionSchema = z.strictObject({
  ...provenance,
  tier: z.enum(['batch', 'flex', 'priority']),
  /** The snapshot's rates of the tier, or null when it has none. */
  snapshot: serviceTierSchema.nullable(),
  rates: serviceTierSchema.refine((r) => Object.keys(r).length > 0, { message: 'a tier correction sets a rate' }),
});

export const priceCorrectionSchema = z.union([rateCorrectionSchema, tierCorrectionSchema]);
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
    let what: string;
    if ('tier' in c) {
      entry.service_tiers = { ...entry.service_tiers, [c.tier]: c.rates };
      what = `${c.tier} tier ${JSON.stringify(c.rates)} (snapshot: ${c.snapshot ? JSON.stringify(c.snapshot) : 'none'})`;
    } else {
      entry[c.field] = c.price;
      what = `${c.field} ${c.price} (snapshot: ${c.snapshot ?? 'none'})`;
    }
    const note = `${what}: ${c.source}, retrieved ${c.retrieved}`;
    entry.source_note = entry.source_note ? `${entry.source_note} | ${note}` : note;
  }
  return out;
}

/** The rate or tier rates a correction replaces, as the entry holds them (null: none). */
function heldValue(m: CatalogModel, c: PriceCorrection): unknown {
  return ('tier' in c ? m.service_tiers?.[c.tier] : m[c.field]) ?? null;
}

/** Whether two rates, or two sets of tier rates, are the same (key order aside). */
function sameRates(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a === b;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  return [...keys].every((k) => x[k] === y[k]);
}

/**
 * An imported catalog with the corrections that still apply: an imported entry that holds the very value a
 * correction replaces (the source has not changed it) gets the correction; one whose source changed the rate, or
 * that the import does not list, is left as imported. A correction of a rate the snapshot has none for needs no
 * help: the import keeps the bundled rates it has none for (catalog.ts).
 */
export function correctedImport(
  models: readonly CatalogModel[],
  corrections: readonly PriceCorrection[],
): CatalogModel[] {
  const apply = corrections.filter((c) => {
    const m = models.find((e) => e.provider === c.provider && e.model === c.model);
    return m !== undefined && c.snapshot !== null && sameRates(heldValue(m, c), c.snapshot);
  });
  return withCorrections(models, apply);
}
