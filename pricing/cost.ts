/**
 * Cost of one request: sum over the disjoint Usage buckets of tokens x rate, in exact pico-USD.
 *
 * Order of decisions:
 *   1. endpoint not counted (audio, images)                  -> null, 'not_counted'
 *   2. usage.providerCostUsd present (OpenRouter usage.cost)  -> that figure, parsed exactly, 'provider_reported'
 *      (the aggregator's own bill wins; catalog discounts are not applied to it)
 *   3. no price, a price without any rate, or no usage        -> null, 'unpriced' (never $0)
 *   4. otherwise                                              -> exact sum, 'priced'
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
 * Long context: when inputTokens + all cache tokens exceed a tier's above_input_tokens, every bucket uses
 * the highest such tier's rate, and the base rate for a bucket the tier does not list (as LiteLLM does).
 * Exactness: all bundled rates are integer pico-USD per token; a rate with more than 6 decimals is kept as
 * a fraction and the total is rounded once, half away from zero (money.ts).
 */
import type { EndpointKey, PicoUsd, Usage } from '../core/usage';
import type { LongContextTier, ModelPrice } from './model-price';
import { ExactSum, parseUsd, rateFromPerMillion, rateFromUsd, type Rate } from './money';

export interface PriceUsageOptions {
  endpoint: EndpointKey;
  /** Whether the endpoint counts toward cost totals (core/endpoints.ts costCounted). */
  counted: boolean;
}

export type ProvenanceHint = 'priced' | 'unpriced' | 'provider_reported' | 'not_counted';

export interface PricedUsage {
  costPico: PicoUsd | null;
  provenanceHint: ProvenanceHint;
  /** Why the cost is null, for logs. */
  reason?: string;
}

type RateBucket = 'input' | 'output' | 'cache_read' | 'cache_write' | 'cache_write_1h' | 'citation' | 'reasoning';
type Rates = Partial<Record<RateBucket, Rate>>;
type ContextSize = 'low' | 'medium' | 'high';

interface Compiled {
  base: Rates;
  /** Highest threshold first. */
  tiers: { above: number; rates: Rates }[];
  requestFee?: Rate | Partial<Record<ContextSize, Rate>>;
  searchFee?: Rate;
  hasAnyRate: boolean;
}

const ZERO: Rate = { num: 0n, scale: 0 };
const DEFAULT_CONTEXT_SIZE: ContextSize = 'low';
const RATE_BUCKETS: RateBucket[] = ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h', 'citation', 'reasoning'];

// ModelPrice objects from PriceCatalog are frozen and cached, so their parsed rates can be cached too.
const compiledCache = new WeakMap<ModelPrice, Compiled>();

function rates(src: Partial<Record<RateBucket, string>> | LongContextTier): Rates {
  const out: Rates = {};
  for (const b of RATE_BUCKETS) {
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
  const compiled: Compiled = {
    base,
    tiers,
    requestFee,
    searchFee,
    hasAnyRate: Object.keys(base).length > 0 || requestFee !== undefined || searchFee !== undefined,
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
] as const;

const unpriced = (reason: string): PricedUsage => ({ costPico: null, provenanceHint: 'unpriced', reason });

/** Prices one request's usage; never throws on bad input (a record must always be written). */
export function priceUsage(price: ModelPrice | undefined, usage: Usage | undefined, opts: PriceUsageOptions): PricedUsage {
  if (!opts.counted) return { costPico: null, provenanceHint: 'not_counted' };

  if (usage?.providerCostUsd !== undefined) {
    try {
      const reported = parseUsd(usage.providerCostUsd);
      if (reported >= 0n) return { costPico: reported, provenanceHint: 'provider_reported' };
    } catch {
      // An unreadable reported cost falls through to the catalog price.
    }
  }
  if (!price) return unpriced('model not in the price catalog');
  if (!usage) return unpriced('no usage reported');

  for (const f of COUNT_FIELDS) {
    const v = usage[f];
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) return unpriced(`invalid ${f}: ${v}`);
  }
  let c: Compiled;
  try {
    c = compile(price);
  } catch (err) {
    return unpriced(`unreadable price: ${(err as Error).message}`);
  }
  if (!c.hasAnyRate) return unpriced(`${price.provider}/${price.model} has no token or request price`);

  const prompt =
    (usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.cacheWrite1hTokens ?? 0);
  const r = c.tiers.find((t) => prompt > t.above)?.rates ?? c.base;
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

  const lines: [number | undefined, Rate | undefined, string][] = [
    [usage.inputTokens, r.input, 'input'],
    [output, r.output, 'output'],
    [reasoning, r.reasoning, 'reasoning'],
    [usage.cacheReadTokens, r.cache_read ?? r.input, 'cache_read'],
    [usage.cacheWriteTokens, r.cache_write ?? r.input, 'cache_write'],
    [usage.cacheWrite1hTokens, r.cache_write_1h, 'cache_write_1h'],
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
  return { costPico: sum.toPico(), provenanceHint: 'priced' };
}
