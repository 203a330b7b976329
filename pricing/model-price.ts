/**
 * The shape of a price-catalog entry (pricing/catalog.json) and of the effective price PriceCatalog returns.
 * Every price is a plain decimal STRING in USD per 1M tokens (fees: USD per request / per query), so no
 * float ever touches a price; the schema rejects anything else, including negatives.
 */
import { z } from 'zod';
import { isPlainDecimal } from './decimal';

/** A non-negative plain decimal string ("2.5", "0.003625", "0"). */
export const decimalString = z
  .string()
  .refine(isPlainDecimal, { message: 'must be a non-negative plain decimal string such as "2.5"' });

/** Per-request fee: flat, or by Perplexity search_context_size. */
export const requestFeeSchema = z.union([
  decimalString,
  z.strictObject({ low: decimalString.optional(), medium: decimalString.optional(), high: decimalString.optional() }),
]);

/** Token-bucket prices, USD per 1M tokens. */
const bucketShape = {
  input: decimalString.optional(),
  output: decimalString.optional(),
  cache_read: decimalString.optional(),
  cache_write: decimalString.optional(),
  cache_write_1h: decimalString.optional(),
  citation: decimalString.optional(),
  /** Reasoning tokens where the provider bills them below the output rate (Perplexity Deep Research). */
  reasoning: decimalString.optional(),
  /** Image and audio tokens (gpt-image, gpt-4o-transcribe, gpt-4o-mini-tts), each at its own rate. */
  input_image: decimalString.optional(),
  output_image: decimalString.optional(),
  input_audio: decimalString.optional(),
  output_audio: decimalString.optional(),
};

/**
 * Prices of audio and images billed by another unit than tokens: USD per second of audio (whisper-1), per
 * character of text to speak (tts-1), per image by "quality/size" ("standard/1024x1024", dall-e).
 */
export const mediaUnitShape = {
  per_second: decimalString.optional(),
  per_character: decimalString.optional(),
  per_image: z.record(z.string().min(1), decimalString).optional(),
};

/** The price fields of audio and image models beside input and output (an override replaces them with the rest). */
export const MEDIA_PRICE_FIELDS = [
  'input_image',
  'output_image',
  'input_audio',
  'output_audio',
  'per_second',
  'per_character',
  'per_image',
] as const;

/** An audio or image price with where it was read (pricing/media-prices.json), merged into its catalog entry. */
export const mediaPriceSchema = z.strictObject({
  provider: z.string().min(1),
  model: z.string().min(1),
  kind: z.string().min(1).optional(),
  input: decimalString.optional(),
  output: decimalString.optional(),
  input_image: decimalString.optional(),
  output_image: decimalString.optional(),
  input_audio: decimalString.optional(),
  output_audio: decimalString.optional(),
  ...mediaUnitShape,
  aliases: z.array(z.string().min(1)).optional(),
  /** Dated snapshots billed otherwise, which must not take this entry's prices. */
  distinct_snapshots: z.array(z.string().min(1)).optional(),
  source: z.string().min(1),
  retrieved: z.string().min(1),
  note: z.string().optional(),
});
export type MediaPrice = z.infer<typeof mediaPriceSchema>;

/** Rates that replace the base rates once a request's prompt exceeds `above_input_tokens`. */
export const longContextTierSchema = z.strictObject({
  above_input_tokens: z.number().int().positive(),
  ...bucketShape,
});

/** Batch / flex / priority rates: applied when the answer names the tier (Usage.serviceTier, pricing/cost.ts). */
export const serviceTierSchema = z.strictObject({
  input: decimalString.optional(),
  output: decimalString.optional(),
  cache_read: decimalString.optional(),
  cache_write: decimalString.optional(),
  cache_write_1h: decimalString.optional(),
});

export const catalogModelSchema = z.strictObject({
  provider: z.string().min(1),
  model: z.string().min(1),
  kind: z.string().min(1),
  ...bucketShape,
  ...mediaUnitShape,
  request_fee: requestFeeSchema.optional(),
  search_query_fee: decimalString.optional(),
  long_context: z.array(longContextTierSchema).optional(),
  service_tiers: z
    .strictObject({
      batch: serviceTierSchema.optional(),
      flex: serviceTierSchema.optional(),
      priority: serviceTierSchema.optional(),
    })
    .optional(),
  context_window: z.number().int().positive().optional(),
  max_output_tokens: z.number().int().positive().optional(),
  created: z.number().int().nonnegative().optional(),
  deprecation_date: z.string().optional(),
  /** Other ids billed at exactly these rates (LiteLLM same-price keys, e.g. dated snapshots). */
  aliases: z.array(z.string().min(1)).optional(),
  /** Dated ids of this model priced differently: the dated-snapshot fallback never maps them here. */
  distinct_snapshots: z.array(z.string().min(1)).optional(),
  litellm_key: z.string().optional(),
  source_note: z.string().optional(),
  /** The price is in force from this time (ISO 8601, UTC) on: before it the entry's undated price applies. */
  effective_from: z.string().optional(),
  /** ...and until this time, excluded. */
  effective_to: z.string().optional(),
});

export const skippedEntrySchema = z.strictObject({
  provider: z.string(),
  model: z.string(),
  field: z.string(),
  reason: z.string(),
  value: z.unknown().optional(),
});

/**
 * A fee per tool or server call (OpenAI web search, file search, code interpreter sessions; Anthropic code
 * execution), for one provider's models: `models` lists the ids it applies to (absent: every model of the
 * provider; a model-specific entry wins). An entry without `usd` names a call that is counted but cannot be
 * priced per request (`note` says why); `estimate` marks a fee whose count can only approximate the bill.
 */
export const toolFeeSchema = z.strictObject({
  provider: z.string().min(1),
  tool: z.string().min(1),
  usd: decimalString.optional(),
  models: z.array(z.string().min(1)).optional(),
  estimate: z.boolean().optional(),
  source: z.string().min(1),
  retrieved: z.string().min(1),
  note: z.string().optional(),
});

export const catalogFileSchema = z.strictObject({
  version: z.string().regex(/^\d{4}-\d{2}-\d{2}\.\d+$/),
  source: z.string(),
  retrieved: z.string(),
  currency: z.literal('USD'),
  unit: z.literal('per 1M tokens'),
  notes: z.array(z.string()).optional(),
  models: z.array(catalogModelSchema),
  tool_fees: z.array(toolFeeSchema).optional(),
  media_prices: z.array(mediaPriceSchema).optional(),
  skipped: z.array(skippedEntrySchema),
});

export type RequestFee = z.infer<typeof requestFeeSchema>;
export type LongContextTier = z.infer<typeof longContextTierSchema>;
export type CatalogModel = z.infer<typeof catalogModelSchema>;
export type SkippedEntry = z.infer<typeof skippedEntrySchema>;
export type CatalogFile = z.infer<typeof catalogFileSchema>;
export type ToolFee = z.infer<typeof toolFeeSchema>;

/** The token buckets a price can carry (CatalogModel keys). */
export const BUCKETS = [
  'input',
  'output',
  'cache_read',
  'cache_write',
  'cache_write_1h',
  'citation',
  'reasoning',
  'input_image',
  'output_image',
  'input_audio',
  'output_audio',
] as const;
export type Bucket = (typeof BUCKETS)[number];

/** How lookup() reached an entry. */
export type MatchRule = 'exact' | 'alias' | 'provider_prefix' | 'dated_snapshot' | 'openrouter_vendor_fallback';

export interface PriceMatch {
  via: MatchRule;
  /** provider/model of the catalog entry whose prices are used. */
  pricedAs: string;
  note?: string;
}

/** A model's effective price: a catalog entry after overrides and discounts. */
export interface ModelPrice extends CatalogModel {
  /** The model id (same as `model`), as GET /v1/models lists it. */
  id: string;
  /** Unix seconds; the catalog's retrieval date when the source gives none, so it is stable. */
  created: number;
  /** Where the prices came from. */
  origin: 'bundled' | 'imported' | 'provider' | 'litellm' | 'override';
  /** Negotiated fraction off already applied to every price and fee of this entry. */
  discount?: string;
  /** Set when lookup() matched anything other than the exact id. */
  match?: PriceMatch;
  /** The tool and server call fees that apply to this model, by tool (discount applied). */
  toolFees?: Readonly<Record<string, ToolFee>>;
}
