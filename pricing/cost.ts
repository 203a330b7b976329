/**
 * Cost of one request: sum over the disjoint Usage buckets of tokens x rate, in exact pico-USD.
 *
 * Order of decisions:
 *   1. audio or images with nothing measured to price by    -> null, 'not_counted' (pricing/media-cost.ts)
 *   2. no price, a price without any rate, or no usage        -> null, 'unpriced' (never $0)
 *   3. otherwise                                              -> exact sum, 'priced'; beside it the list cost, the
 *      same sum before a negotiated discount (pricing.discounts multiplies every rate of an entry exactly)
 *   4. usage.providerCostUsd present (OpenRouter, Perplexity usage.cost): kept beside the computed cost and
 *      compared with it (pricing/provider-figure.ts); it replaces the computed cost when that is unknown, rests on
 *      another seller's price, or is no more precise ('provider_reported'; catalog discounts are not applied to it)
 *
 * Bucket rates and fallbacks (a bucket with tokens and no possible rate makes the whole result unpriced):
 *   inputTokens       input
 *   outputTokens      output; reasoningTokens are already inside and never added again. Only where the
 *                     price has its own `reasoning` rate (Perplexity Deep Research bills reasoning at $3 vs
 *                     $8 output) is the reasoning share of outputTokens priced at that rate instead
 *   cacheReadTokens   cache_read, else input: providers without a cache discount bill cached tokens as input
 *   cacheWriteTokens  cache_write, else input: only Anthropic (and OpenAI gpt-5.6) surcharge writes, and
 *                     those entries carry the rate; elsewhere written tokens are ordinary input
 *   cacheWrite1hTokens cache_write_1h, no fallback (Anthropic bills 2x input, no other rate is right)
 *   citationTokens    citation; models billed by request fee (Perplexity Sonar / Pro / Reasoning) do not
 *                     bill citation tokens (only Deep Research does), so 0 there; else unpriced
 *   searchQueries     x search_query_fee; covered by the request fee where there is one; else unpriced
 *   request_fee       once per request; Perplexity tier by searchContextSize, default 'low' (Perplexity's
 *                     documented default search_context_size); an unknown size is unpriced
 * Service tier: an answer that names a tier other than the standard one (Usage.serviceTier: flex, priority, batch
 * ...) is priced at that tier's rates (service_tiers), and only those: a tier the entry does not price, a bucket
 * the tier lists no rate for, or a prompt past a long-context threshold under a tier is unpriced, never the
 * standard rate.
 * Long context: when inputTokens + all cache tokens exceed a tier's above_input_tokens, every bucket uses
 * the highest such tier's rate, and the base rate for a bucket the tier does not list (as LiteLLM does).
 * When the usage carries per-iteration counts (Usage.iterations), the tier is chosen per iteration.
 * Exactness: all bundled rates are integer pico-USD per token; a rate with more than 6 decimals is kept as
 * a fraction and the total is rounded once, half away from zero (money.ts).
 */
import type { EndpointKey, IterationUsage, Usage } from '../core/usage';
import { MEDIA_UNIT_FIELDS, type PicoUsd } from '../records/usage-record';
import { BUCKETS, type Bucket, type LongContextTier, type ModelPrice } from './model-price';
import { billedMediaUsage, mediaUnitLines } from './media-cost';
import { ExactSum, rateFromPerMillion, rateFromUsd, type Rate } from './money';
import { providerFigure, withProviderFigure } from './provider-figure';

export interface PriceUsageOptions {
  endpoint: EndpointKey;
  /** Whether the endpoint counts toward cost totals (core/endpoints.ts costCounted). */
  counted: boolean;
}

export type ProvenanceHint = 'priced' | 'unpriced' | 'provider_reported' | 'not_counted';

export interface PricedUsage {
  costPico: PicoUsd | null;
  /**
   * The cost at the catalog's list price, before a negotiated discount (pricing.discounts): the cost itself when no
   * discount applies (the provider's own figure included), null when the cost is unknown.
   */
  listCostPico?: PicoUsd | null;
  provenanceHint: ProvenanceHint;
  /** Why the cost is null, for logs. */
  reason?: string;
  /** The provider's own figure (usage.cost), when it reported one. */
  providerCostPico?: PicoUsd;
  /** The cost computed from the counts and the catalog, when the record uses the provider's figure instead. */
  computedCostPico?: PicoUsd | null;
  /** The provider's figure and the computed one differ by more than 1% plus half the provider's rounding step. */
  costDisagrees?: boolean;
  /** A fee in the cost could only be estimated (e.g. code interpreter sessions), or a counted call has no price. */
  estimated?: boolean;
  /** Calls counted but not priced per request (the catalog entry says why), by tool. */
  unpricedCalls?: Readonly<Record<string, number>>;
  /** provider/model of the catalog entry whose prices were used. */
  priceId?: string;
  /** The price version of a dated price (PriceCatalog.versionOf), recorded instead of the catalog's. */
  priceVersion?: string;
}

type Rates = Partial<Record<Bucket, Rate>>;
type ContextSize = 'low' | 'medium' | 'high';

interface Compiled {
  base: Rates;
  /** The rates of each non-standard service tier the entry prices. */
  serviceTiers: Partial<Record<string, Rates>>;
  /** Highest threshold first. */
  tiers: { above: number; rates: Rates }[];
  requestFee?: Rate | Partial<Record<ContextSize, Rate>>;
  searchFee?: Rate;
  hasAnyRate: boolean;
  /** provider/model, as PricedUsage.priceId (built once, not per request). */
  priceId: string;
}

const ZERO: Rate = { num: 0n, scale: 0 };
const DEFAULT_CONTEXT_SIZE: ContextSize = 'low';

// ModelPrice objects from PriceCatalog are frozen and cached, so their parsed rates can be cached too.
const compiledCache = new WeakMap<ModelPrice, Compiled>();

function rates(src: Partial<Record<Bucket, string>> | LongContextTier): Rates {
  const out: Rates = {};
  for (const b of BUCKETS) {
    const v = src[b];
    if (v !== undefined) out[b] = rateFromPerMillion(v);
  }
  return out;
}

function compile(price: ModelPrice): Compiled {
  const cached = compiledCache.get(price);
  if (cached) return cached;
  const base = rates(price);
  const tiers = (price.long_context ?? [])
    .map((t) => ({ above: t.above_input_tokens, rates: { ...base, ...rates(t) } }))
    .sort((a, b) => b.above - a.above);
  let requestFee: Compiled['requestFee'];
  const f = price.request_fee;
  if (typeof f === 'string') requestFee = rateFromUsd(f);
  else if (f) {
    const bySize: Partial<Record<ContextSize, Rate>> = {};
    for (const size of ['low', 'medium', 'high'] as const) {
      const v = f[size];
      if (v !== undefined) bySize[size] = rateFromUsd(v);
    }
    requestFee = bySize;
  }
  const searchFee = price.search_query_fee === undefined ? undefined : rateFromUsd(price.search_query_fee);
  const serviceTiers: Compiled['serviceTiers'] = {};
  for (const [name, t] of Object.entries(price.service_tiers ?? {})) if (t) serviceTiers[name] = rates(t);
  const compiled: Compiled = {
    base,
    serviceTiers,
    tiers,
    requestFee,
    searchFee,
    hasAnyRate:
      Object.keys(base).length > 0 ||
      requestFee !== undefined ||
      searchFee !== undefined ||
      price.per_second !== undefined ||
      price.per_character !== undefined ||
      price.per_image !== undefined,
    priceId: `${price.provider}/${price.model}`,
  };
  compiledCache.set(price, compiled);
  return compiled;
}

const COUNT_FIELDS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  'citationTokens',
  'searchQueries',
  'reasoningTokens',
  ...MEDIA_UNIT_FIELDS,
] as const;

type Line = [units: number | undefined, rate: Rate | undefined, name: string];

/** The tier names answers use for the standard rates (OpenAI default, Anthropic standard, Groq on_demand). */
const STANDARD_TIERS: ReadonlySet<string> = new Set(['default', 'standard', 'auto', 'on_demand']);

/**
 * The rates of the service tier an answer names, or why it cannot be priced; undefined for the standard tier
 * (its rates, long context included, apply as usual).
 */
function servedTierRates(c: Compiled, price: ModelPrice, usage: Usage): Rates | string | undefined {
  const tier = usage.serviceTier;
  if (tier === undefined || STANDARD_TIERS.has(tier)) return undefined;
  const rates = Object.hasOwn(c.serviceTiers, tier) ? c.serviceTiers[tier] : undefined;
  if (!rates) return `${price.provider}/${price.model} has no price for the ${tier} service tier`;
  const prompts = usage.iterations ?? [usage];
  if (prompts.some((u) => tierRates(c, u) !== c.base))
    return `${price.provider}/${price.model} has no long-context price for the ${tier} service tier`;
  return rates;
}

/** The rates of the highest long-context tier the prompt (input plus every cache bucket) exceeds, else the base. */
function tierRates(c: Compiled, u: IterationUsage): Rates {
  const prompt =
    (u.inputTokens ?? 0) + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
  return c.tiers.find((t) => prompt > t.above)?.rates ?? c.base;
}

/** The token buckets of a request or of one iteration, each with its rate (and the fallbacks of the header). */
function tokenBucketLines(u: IterationUsage, output: number | undefined, r: Rates): Line[] {
  return [
    [u.inputTokens, r.input, 'input'],
    [output, r.output, 'output'],
    [u.cacheReadTokens, r.cache_read ?? r.input, 'cache_read'],
    [u.cacheWriteTokens, r.cache_write ?? r.input, 'cache_write'],
    [u.cacheWrite1hTokens, r.cache_write_1h, 'cache_write_1h'],
  ];
}

/** Image and audio tokens (gpt-image, gpt-4o-transcribe, gpt-4o-mini-tts), each at its own rate: no fallback. */
function mediaTokenLines(u: Usage, r: Rates): Line[] {
  return [
    [u.inputImageTokens, r.input_image, 'input_image'],
    [u.outputImageTokens, r.output_image, 'output_image'],
    [u.inputAudioTokens, r.input_audio, 'input_audio'],
    [u.outputAudioTokens, r.output_audio, 'output_audio'],
  ];
}

/**
 * Adds each counted tool call times its fee (ModelPrice.toolFees). A call kind the catalog does not know makes
 * the cost unknown (the reason is returned); one it lists without a price is counted only (unpricedCalls), and
 * a fee marked as an estimate marks the cost estimated.
 */
function addToolFees(
  sum: ExactSum,
  price: ModelPrice,
  calls: Usage['toolCalls'],
): Pick<PricedUsage, 'estimated' | 'unpricedCalls'> | string {
  const out: { estimated?: boolean; unpricedCalls?: Record<string, number> } = {};
  for (const [tool, n] of Object.entries(calls ?? {})) {
    if (!n) continue;
    if (!(Number.isSafeInteger(n) && n > 0)) return `invalid ${tool} call count: ${n}`;
    const fee = price.toolFees?.[tool];
    if (!fee) return `${price.provider}/${price.model} has no fee for ${n} ${tool} calls`;
    if (fee.usd === undefined) {
      (out.unpricedCalls ??= {})[tool] = n;
      continue;
    }
    sum.add(BigInt(n), rateFromUsd(fee.usd));
    if (fee.estimate) out.estimated = true;
  }
  return out;
}

const unpriced = (reason: string): PricedUsage => ({ costPico: null, provenanceHint: 'unpriced', reason });

/** Prices one request's usage; never throws on bad input (a record must always be written). */
export function priceUsage(
  price: ModelPrice | undefined,
  usage: Usage | undefined,
  opts: PriceUsageOptions,
): PricedUsage {
  if (!opts.counted) {
    const billed = billedMediaUsage(price, usage);
    if (!billed) return { costPico: null, provenanceHint: 'not_counted', reason: 'nothing measured to price by' };
    return computeCost(price, billed);
  }
  const computed = computeCost(price, usage);
  const reported = providerFigure(usage);
  if (reported === undefined) return computed;
  return withProviderFigure(computed, reported, price);
}

/** The cost from the usage's counts and the catalog price (steps 3 and 4 of the header). */
function computeCost(price: ModelPrice | undefined, usage: Usage | undefined): PricedUsage {
  if (!price) return unpriced('model not in the price catalog');
  if (!usage) return unpriced('no usage reported');

  for (const f of COUNT_FIELDS) {
    const v = usage[f];
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) return unpriced(`invalid ${f}: ${v}`);
  }
  for (const it of usage.iterations ?? []) {
    for (const v of Object.values(it)) {
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) return unpriced(`invalid iteration count: ${v}`);
    }
  }
  let c: Compiled;
  try {
    c = compile(price);
  } catch (err) {
    return unpriced(`unreadable price: ${(err as Error).message}`);
  }
  if (!c.hasAnyRate) return unpriced(`${price.provider}/${price.model} has no token or request price`);

  const served = servedTierRates(c, price, usage);
  if (typeof served === 'string') return unpriced(served);
  const r = served ?? tierRates(c, usage);
  const byRequest = c.requestFee !== undefined;

  // Split outputTokens only when reasoning has its own rate; otherwise reasoning is just output.
  let output = usage.outputTokens;
  let reasoning: number | undefined;
  if (r.reasoning !== undefined && usage.reasoningTokens) {
    if (output === undefined || usage.reasoningTokens > output) {
      return unpriced(`reasoningTokens ${usage.reasoningTokens} exceed outputTokens ${output}`);
    }
    reasoning = usage.reasoningTokens;
    output -= reasoning;
  }

  // With per-iteration counts (Anthropic compaction, server-tool loops) each iteration is priced at its own
  // long-context tier; the sums above only decide the rates of what is not per iteration.
  const tokenLines =
    usage.iterations && c.tiers.length > 0 && reasoning === undefined && !served
      ? usage.iterations.flatMap((it) => tokenBucketLines(it, it.outputTokens, tierRates(c, it)))
      : tokenBucketLines(usage, output, r);
  const units = mediaUnitLines(price, usage);
  if (typeof units === 'string') return unpriced(units);
  const lines: Line[] = [
    ...tokenLines,
    ...mediaTokenLines(usage, r),
    ...units,
    [reasoning, r.reasoning, 'reasoning'],
    [usage.citationTokens, r.citation ?? (byRequest ? ZERO : undefined), 'citation'],
    [usage.searchQueries, c.searchFee ?? (byRequest ? ZERO : undefined), 'search_query_fee'],
  ];
  const sum = new ExactSum();
  for (const [units, rate, name] of lines) {
    if (!units) continue;
    if (!rate) return unpriced(`${price.provider}/${price.model} has no ${name} rate for ${units} units`);
    sum.add(BigInt(units), rate);
  }

  if (c.requestFee !== undefined) {
    let fee: Rate | undefined;
    if ('num' in c.requestFee) fee = c.requestFee as Rate;
    else {
      const size = (usage.searchContextSize ?? DEFAULT_CONTEXT_SIZE).trim().toLowerCase();
      fee = (c.requestFee as Partial<Record<string, Rate>>)[size];
      if (!fee) return unpriced(`${price.provider}/${price.model} has no request fee for search context size ${size}`);
    }
    sum.add(1n, fee);
  }
  const tools = addToolFees(sum, price, usage.toolCalls);
  if (typeof tools === 'string') return unpriced(tools);
  const costPico = sum.toPico();
  // Every rate of a discounted entry is its list rate times (1 - discount): the list cost comes from the same sum.
  const listCostPico = price.discount === undefined ? costPico : sum.undiscountedPico(price.discount);
  return { costPico, listCostPico, provenanceHint: 'priced', priceId: c.priceId, ...tools };
}
