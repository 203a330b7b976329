/**
 * The `pricing:` block of gateway.config.yaml: price overrides, negotiated discounts and a LiteLLM price file.
 *
 * Units are explicit because per-token vs per-1M confusion caused 100x errors in other gateways
 * (bifrost #5243 / #3559):
 *   - `input`, `output`, `cache_read`, `cache_write`, `cache_write_1h`, `citation` (or the same with
 *     `_per_1m`) are USD per 1M tokens;
 *   - `<bucket>_per_token` is USD per token and is converted exactly (x 1,000,000);
 *   - a per-1M price below 0.001 (no real model is that cheap; it is what a per-token price looks like),
 *     a per-1M price above 10,000 and a per-token price above 0.01 are refused with a message naming the
 *     field to use instead;
 *   - `request_fee` / `search_query_fee` are USD per request / per search query; `per_second`, `per_character` and
 *     `per_image` ({ "standard/1024x1024": ... }) USD per second of audio, character of speech, image.
 * Numbers are converted through their shortest decimal string (0.15 -> "0.15"), never through arithmetic.
 */
import { z } from 'zod';
import { compareDecimal, decimalFromNumber, formatDecimal, parseDecimal, shiftDecimal } from './decimal';
import { BUCKETS, type Bucket, type CatalogModel, type LongContextTier, type RequestFee } from './model-price';

const MIN_PER_MILLION = '0.001';
const MAX_PER_MILLION = '10000';
const MAX_PER_TOKEN = '0.01';

type Ctx = z.RefinementCtx;
type Path = (string | number)[];

const numeric = z.union([z.string(), z.number()]);

/** A number or decimal string as a canonical non-negative decimal string; reports an issue otherwise. */
function toDecimal(v: string | number, ctx: Ctx, path: Path): string | undefined {
  let text: string;
  try {
    text = typeof v === 'number' ? decimalFromNumber(v) : formatDecimal(parseDecimal(v.trim()));
  } catch {
    ctx.addIssue({ code: 'custom', path, message: `must be a decimal number, got ${JSON.stringify(v)}` });
    return undefined;
  }
  if (text.startsWith('-')) {
    ctx.addIssue({ code: 'custom', path, message: `must not be negative (got ${text})` });
    return undefined;
  }
  return text;
}

/** Reads one bucket given as `<b>`, `<b>_per_1m` or `<b>_per_token`, enforcing the unit rules above. */
function bucketPrice(raw: Record<string, unknown>, b: Bucket, ctx: Ctx, base: Path): string | undefined {
  const given = [b, `${b}_per_1m`, `${b}_per_token`].filter((k) => raw[k] !== undefined);
  if (given.length === 0) return undefined;
  if (given.length > 1) {
    ctx.addIssue({ code: 'custom', path: [...base, given[1]], message: `give only one of ${given.join(', ')}` });
    return undefined;
  }
  const key = given[0];
  const path = [...base, key];
  const value = toDecimal(raw[key] as string | number, ctx, path);
  if (value === undefined) return undefined;
  if (key.endsWith('_per_token')) {
    if (compareDecimal(value, MAX_PER_TOKEN) > 0) {
      ctx.addIssue({
        code: 'custom',
        path,
        message: `${value} USD per token is implausibly large and looks like a per-1M-tokens price; write ${b}: ${value} (USD per 1M tokens)`,
      });
      return undefined;
    }
    return shiftDecimal(value, 6);
  }
  if (value !== '0' && compareDecimal(value, MIN_PER_MILLION) < 0) {
    ctx.addIssue({
      code: 'custom',
      path,
      message: `${value} USD per 1M tokens is implausibly small and looks like a per-token price; ${key} is USD per 1M tokens: write ${b}: ${shiftDecimal(value, 6)} or ${b}_per_token: ${value}`,
    });
    return undefined;
  }
  if (compareDecimal(value, MAX_PER_MILLION) > 0) {
    ctx.addIssue({
      code: 'custom',
      path,
      message: `${value} USD per 1M tokens is implausibly large; ${key} is USD per 1M tokens (use ${b}_per_token for per-token prices)`,
    });
    return undefined;
  }
  return value;
}

const bucketKeys = Object.fromEntries(
  BUCKETS.flatMap((b) => [b, `${b}_per_1m`, `${b}_per_token`]).map((k) => [k, numeric.optional()]),
) as Record<`${Bucket}` | `${Bucket}_per_1m` | `${Bucket}_per_token`, z.ZodOptional<typeof numeric>>;

function buckets(raw: Record<string, unknown>, ctx: Ctx, base: Path): Partial<Record<Bucket, string>> {
  const out: Partial<Record<Bucket, string>> = {};
  for (const b of BUCKETS) {
    const v = bucketPrice(raw, b, ctx, base);
    if (v !== undefined) out[b] = v;
  }
  return out;
}

const longContextInput = z.strictObject({ above_input_tokens: z.number().int().positive(), ...bucketKeys });

/** A service tier's rates, USD per 1M tokens (the tiers of the bundled catalog: batch, flex, priority). */
const TIER_BUCKETS = ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h'] as const;
const tierInput = z.strictObject(Object.fromEntries(TIER_BUCKETS.map((b) => [b, numeric.optional()])));
const SERVICE_TIERS = ['batch', 'flex', 'priority'] as const;
type ServiceTiers = NonNullable<CatalogModel['service_tiers']>;

function serviceTiers(raw: Partial<Record<string, Record<string, unknown>>>, ctx: Ctx): ServiceTiers {
  const out: ServiceTiers = {};
  for (const tier of SERVICE_TIERS) {
    const t = raw[tier];
    if (!t) continue;
    const rates: Partial<Record<(typeof TIER_BUCKETS)[number], string>> = {};
    for (const b of TIER_BUCKETS) {
      const v = t[b] === undefined ? undefined : toDecimal(t[b] as string | number, ctx, ['service_tiers', tier, b]);
      if (v !== undefined) rates[b] = v;
    }
    out[tier] = rates;
  }
  return out;
}

const modelOverrideInput = z.strictObject({
  provider: z.string().min(1),
  model: z.string().min(1),
  ...bucketKeys,
  request_fee: z
    .union([numeric, z.strictObject({ low: numeric.optional(), medium: numeric.optional(), high: numeric.optional() })])
    .optional(),
  search_query_fee: numeric.optional(),
  /** In force from (and until, excluded) these times: ISO 8601 dates or times, UTC (pricing/dated-prices.ts). */
  effective_from: z.iso
    .date()
    .or(z.iso.datetime({ offset: true }))
    .optional(),
  effective_to: z.iso
    .date()
    .or(z.iso.datetime({ offset: true }))
    .optional(),
  /** Audio and images: USD per second of audio, per character of text to speak, per image by "quality/size". */
  per_second: numeric.optional(),
  per_character: numeric.optional(),
  per_image: z.record(z.string().min(1), numeric).optional(),
  long_context: z.array(longContextInput).optional(),
  /** Rates of the service tiers an answer may name (batch, flex, priority), USD per 1M tokens. */
  service_tiers: z.strictObject(Object.fromEntries(SERVICE_TIERS.map((t) => [t, tierInput.optional()]))).optional(),
  kind: z.string().min(1).optional(),
  context_window: z.number().int().positive().optional(),
  max_output_tokens: z.number().int().positive().optional(),
  created: z.number().int().nonnegative().optional(),
  aliases: z.array(z.string().min(1)).optional(),
});

/** A price override after validation: prices as canonical decimal strings, USD per 1M tokens. */
export type ModelOverride = Omit<CatalogModel, 'kind'> & { kind?: string };

const modelOverride = modelOverrideInput.transform((raw, ctx): ModelOverride => {
  const out: ModelOverride = { provider: normalizeProviderSlug(raw.provider), model: raw.model.trim() };
  Object.assign(out, buckets(raw, ctx, []));
  if (raw.request_fee !== undefined) {
    const f = raw.request_fee;
    if (typeof f === 'object') {
      const tiers: Exclude<RequestFee, string> = {};
      for (const size of ['low', 'medium', 'high'] as const) {
        const v = f[size] === undefined ? undefined : toDecimal(f[size], ctx, ['request_fee', size]);
        if (v !== undefined) tiers[size] = v;
      }
      out.request_fee = tiers;
    } else {
      out.request_fee = toDecimal(f, ctx, ['request_fee']);
    }
  }
  if (raw.search_query_fee !== undefined)
    out.search_query_fee = toDecimal(raw.search_query_fee, ctx, ['search_query_fee']);
  for (const k of ['per_second', 'per_character'] as const) {
    if (raw[k] !== undefined) out[k] = toDecimal(raw[k], ctx, [k]);
  }
  if (raw.per_image !== undefined) {
    const byKind: Record<string, string> = {};
    for (const [kind, v] of Object.entries(raw.per_image)) {
      const usd = toDecimal(v, ctx, ['per_image', kind]);
      if (usd !== undefined) byKind[kind] = usd;
    }
    out.per_image = byKind;
  }
  if (raw.long_context !== undefined) {
    out.long_context = raw.long_context.map((t, i): LongContextTier => ({
      above_input_tokens: t.above_input_tokens,
      ...buckets(t, ctx, ['long_context', i]),
    }));
  }
  if (raw.service_tiers !== undefined) out.service_tiers = serviceTiers(raw.service_tiers, ctx);
  for (const k of ['effective_from', 'effective_to'] as const) {
    if (raw[k] !== undefined) out[k] = new Date(raw[k]).toISOString();
  }
  if (out.effective_from && out.effective_to && out.effective_from >= out.effective_to)
    ctx.addIssue({ code: 'custom', message: 'effective_to must be after effective_from', path: ['effective_to'] });
  for (const k of ['kind', 'context_window', 'max_output_tokens', 'created', 'aliases'] as const) {
    if (raw[k] !== undefined) (out as Record<string, unknown>)[k] = raw[k];
  }
  return out;
});

/** A negotiated discount: the fraction taken off every price of a provider ("0.2" = 20% off). */
const discount = numeric.transform((v, ctx): string => {
  const d = toDecimal(v, ctx, []);
  if (d === undefined) return z.NEVER;
  if (compareDecimal(d, '1') >= 0) {
    const hint = compareDecimal(d, '100') <= 0 ? `; did you mean ${shiftDecimal(d, -2)}?` : '';
    ctx.addIssue({ code: 'custom', message: `a discount is a fraction off below 1 (0.2 = 20% off), got ${d}${hint}` });
    return z.NEVER;
  }
  return d;
});

/** Schema of the `pricing:` block of gateway.config.yaml. */
export const pricingConfigSchema = z.strictObject({
  /**
   * The catalog `tollgate prices update` writes and start-up reads when it exists (default ./data/prices.json);
   * relative paths resolve against the config dir. Below the provider modules' prices, litellm_file and models.
   */
  catalog_file: z.string().min(1).optional(),
  /** A LiteLLM model_prices_and_context_window.json to load; relative paths resolve against the config dir. */
  litellm_file: z.string().min(1).optional(),
  /**
   * Negotiated discounts, applied exactly to every price and fee: per provider slug (`openai`), or per model of a
   * provider (`anthropic/claude-opus-4-1`, the catalog entry's model), which wins over the provider's.
   */
  discounts: z
    .record(z.string().min(1), discount)
    .transform((d) => Object.fromEntries(Object.entries(d).map(([key, v]) => [discountKey(key), v])))
    .default({}),
  /** Models to add, or whose prices to replace (all price fields of the entry are replaced together). */
  models: z.array(modelOverride).default([]),
});

/** The `pricing:` block after validation and unit normalisation. */
export type PricingConfig = z.output<typeof pricingConfigSchema>;

/** Provider naming used by sources and vendors -> the gateway's provider slug. */
const PROVIDER_ALIASES: Record<string, string> = { google: 'gemini', 'x-ai': 'xai', mistralai: 'mistral' };

/** A discounts key with its provider part normalised: `OpenAI` -> `openai`, `Google/gemini-2.5-pro` -> `gemini/...`. */
function discountKey(key: string): string {
  const slash = key.indexOf('/');
  return slash === -1
    ? normalizeProviderSlug(key)
    : `${normalizeProviderSlug(key.slice(0, slash))}/${key.slice(slash + 1)}`;
}

export function normalizeProviderSlug(provider: string): string {
  const p = provider.trim().toLowerCase();
  return PROVIDER_ALIASES[p] ?? p;
}
