/**
 * Import of a LiteLLM model_prices_and_context_window.json as catalog entries. Token rates (text, cache, audio,
 * image, reasoning, citation), long-context tiers and service-tier rates (_batches, _flex, _priority) are carried;
 * every other price field of an imported entry is listed in `skipped` with the reason, as are entries not imported.
 *
 * LiteLLM stores USD per token as JSON numbers (2.5e-06). JSON.parse yields doubles; each is turned back
 * into the decimal literal it was written as via its shortest round-trip string (decimal.ts
 * decimalFromNumber) and shifted by 6 places to USD per 1M tokens, with no float arithmetic. That is exact
 * for files written by a shortest-repr serializer (Python json.dumps, JSON.stringify); a literal with more
 * than 17 significant digits cannot survive any JSON parser and would be read as its nearest double.
 */
import { compareDecimal, decimalFromNumber, shiftDecimal } from './decimal';
import type { Bucket, CatalogModel, LongContextTier, SkippedEntry } from './model-price';

/** LiteLLM provider -> gateway provider slug; entries of other providers (bedrock, azure, vertex...) are skipped. */
const PROVIDERS: Record<string, string> = {
  openai: 'openai',
  'text-completion-openai': 'openai',
  anthropic: 'anthropic',
  perplexity: 'perplexity',
  openrouter: 'openrouter',
  gemini: 'gemini',
  mistral: 'mistral',
  deepseek: 'deepseek',
  xai: 'xai',
  groq: 'groq',
};

/** Whether a provider slug is one of the gateway's (the others' entries are not imported). */
export const isGatewayProvider = (slug: string): boolean => Object.values(PROVIDERS).includes(slug);

/** LiteLLM per-token fields -> catalog buckets. Longest names first so the tier regex matches greedily. */
const FIELDS: [string, Bucket][] = [
  ['cache_creation_input_token_cost_above_1hr', 'cache_write_1h'],
  ['cache_creation_input_token_cost', 'cache_write'],
  ['cache_read_input_token_cost', 'cache_read'],
  ['input_cost_per_token', 'input'],
  ['output_cost_per_token', 'output'],
  ['citation_cost_per_token', 'citation'],
  ['output_cost_per_reasoning_token', 'reasoning'],
  ['input_cost_per_audio_token', 'input_audio'],
  ['output_cost_per_audio_token', 'output_audio'],
  ['input_cost_per_image_token', 'input_image'],
  ['output_cost_per_image_token', 'output_image'],
];

/** LiteLLM's service-tier fields ("<field>_flex", "<field>_priority", "<field>_batches") -> catalog service_tiers. */
const SERVICE_TIER_FIELDS: Record<
  string,
  ['input' | 'output' | 'cache_read' | 'cache_write', 'batch' | 'flex' | 'priority']
> = Object.fromEntries(
  (
    [
      ['input_cost_per_token', 'input'],
      ['output_cost_per_token', 'output'],
      ['cache_read_input_token_cost', 'cache_read'],
      ['cache_creation_input_token_cost', 'cache_write'],
    ] as const
  ).flatMap(([field, bucket]) => [
    [`${field}_batches`, [bucket, 'batch']],
    [`${field}_flex`, [bucket, 'flex']],
    [`${field}_priority`, [bucket, 'priority']],
  ]),
);

/** Fields read elsewhere in convert() (request fees, search fees), not prices to list as skipped. */
const HANDLED_FIELDS = new Set(['search_context_cost_per_query', 'input_cost_per_query', 'input_cost_per_request']);

/** A field that names a price: what the import must either map or list as skipped. */
const isPriceField = (field: string): boolean => /cost|price/.test(field) && !HANDLED_FIELDS.has(field);
const TIER_KEY = new RegExp(`^(${FIELDS.map(([f]) => f).join('|')})_above_(\\d+)k_tokens$`);

const KINDS: Record<string, string> = {
  chat: 'chat',
  responses: 'chat',
  completion: 'completion',
  embedding: 'embedding',
  image_generation: 'image',
  image_edit: 'image',
  audio_transcription: 'audio',
  audio_speech: 'audio',
  moderation: 'moderation',
  moderations: 'moderation',
  rerank: 'rerank',
  search: 'search',
  video_generation: 'video',
};

// Same sanity bound as the config's *_per_token fields: above this a "per-token" value is a unit error.
const MAX_PER_TOKEN = '0.01';

export interface LiteLlmImport {
  models: CatalogModel[];
  skipped: SkippedEntry[];
}

/** A LiteLLM number as an exact decimal string, or a reason why it is not a usable price. */
function decimalOf(v: unknown): string | Error {
  if (typeof v !== 'number' || !Number.isFinite(v)) return new Error(`not a number: ${JSON.stringify(v)}`);
  const d = decimalFromNumber(v);
  return d.startsWith('-') ? new Error(`negative: ${d}`) : d;
}

function perMillion(v: unknown): string | Error {
  const d = decimalOf(v);
  if (d instanceof Error) return d;
  if (compareDecimal(d, MAX_PER_TOKEN) > 0) return new Error(`${d} per token is implausible (unit error?)`);
  return shiftDecimal(d, 6);
}

function convert(
  key: string,
  e: Record<string, unknown>,
  provider: string,
  litellmProvider: string,
  skipField: (model: string, field: string, value: unknown, reason: string) => void,
): CatalogModel | Error {
  // API id: the key minus LiteLLM's provider prefix ("gemini/gemini-2.5-pro" -> "gemini-2.5-pro").
  const model = key.startsWith(`${litellmProvider}/`) ? key.slice(litellmProvider.length + 1) : key;
  const mode = typeof e.mode === 'string' ? e.mode : 'chat';
  const out: CatalogModel = { provider, model, kind: KINDS[mode] ?? mode, litellm_key: key };
  const tiers = new Map<number, LongContextTier>();
  const serviceTiers: NonNullable<CatalogModel['service_tiers']> = {};
  const unmapped: [string, unknown][] = [];
  for (const [field, value] of Object.entries(e)) {
    const base = FIELDS.find(([f]) => f === field);
    const tier = TIER_KEY.exec(field);
    const served = Object.hasOwn(SERVICE_TIER_FIELDS, field) ? SERVICE_TIER_FIELDS[field] : undefined;
    if (served) {
      const price = perMillion(value);
      if (price instanceof Error) return new Error(`${field}: ${price.message}`);
      (serviceTiers[served[1]] ??= {})[served[0]] = price;
      continue;
    }
    if (!base && !tier) {
      if (isPriceField(field) && value !== null && value !== undefined) unmapped.push([field, value]);
      continue;
    }
    const price = perMillion(value);
    if (price instanceof Error) return new Error(`${field}: ${price.message}`);
    if (base) {
      out[base[1]] = price;
    } else if (tier) {
      const above = Number(tier[2]) * 1000;
      const t = tiers.get(above) ?? { above_input_tokens: above };
      t[FIELDS.find(([f]) => f === tier[1])![1]] = price;
      tiers.set(above, t);
    }
  }
  if (tiers.size > 0)
    out.long_context = [...tiers.values()].sort((a, b) => a.above_input_tokens - b.above_input_tokens);
  if (Object.keys(serviceTiers).length > 0) out.service_tiers = serviceTiers;

  const search = e.search_context_cost_per_query;
  if (search !== undefined && typeof search === 'object' && search !== null) {
    const s = search as Record<string, unknown>;
    const fee = (size: string): string | undefined => {
      const d = decimalOf(s[`search_context_size_${size}`]);
      return d instanceof Error ? undefined : d;
    };
    if (provider === 'perplexity' && !model.includes('deep-research')) {
      // Perplexity Sonar: a per-request fee chosen by search_context_size.
      out.request_fee = Object.fromEntries(
        (['low', 'medium', 'high'] as const).flatMap((size) => {
          const v = fee(size);
          return v === undefined ? [] : [[size, v]];
        }),
      );
    } else {
      // Deep Research and the web-search / grounding tools bill per search query; LiteLLM's default size is medium.
      const v = fee('medium');
      if (v !== undefined) out.search_query_fee = v;
    }
  }
  if (e.input_cost_per_query !== undefined || e.input_cost_per_request !== undefined) {
    const d = decimalOf(e.input_cost_per_query ?? e.input_cost_per_request);
    if (d instanceof Error) return new Error(`input_cost_per_query: ${d.message}`);
    out.request_fee = d;
  }
  if (typeof e.max_input_tokens === 'number' && Number.isSafeInteger(e.max_input_tokens) && e.max_input_tokens > 0) {
    out.context_window = e.max_input_tokens;
  }
  if (typeof e.max_output_tokens === 'number' && Number.isSafeInteger(e.max_output_tokens) && e.max_output_tokens > 0) {
    out.max_output_tokens = e.max_output_tokens;
  }
  if (typeof e.deprecation_date === 'string') out.deprecation_date = e.deprecation_date;

  const priced =
    out.input !== undefined ||
    out.output !== undefined ||
    out.request_fee !== undefined ||
    out.search_query_fee !== undefined;
  if (!priced) return new Error('no per-token or per-request price (non-token pricing is not represented)');
  for (const [field, value] of unmapped) skipField(model, field, value, skipReason(field));
  return out;
}

/** Why a LiteLLM price field of an imported entry is not carried. */
function skipReason(field: string): string {
  if (/per_second|per_character|per_image|per_pixel/.test(field))
    return 'a per-second, per-character or per-image price: this entry is priced by its tokens';
  if (/cache/.test(field)) return 'a cache rate of a kind no usage bucket counts (cached audio, a cache-storage fee)';
  return 'no usage bucket is billed at this rate';
}

/** Converts a parsed LiteLLM price file; every entry not imported is listed in `skipped` with the reason. */
export function importLiteLlm(json: unknown): LiteLlmImport {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new Error('LiteLLM price file: expected a JSON object keyed by model id');
  }
  const models: CatalogModel[] = [];
  const skipped: SkippedEntry[] = [];
  const seen = new Map<string, string>(); // provider/model -> LiteLLM key it came from
  for (const [key, raw] of Object.entries(json as Record<string, unknown>)) {
    if (key === 'sample_spec') continue; // LiteLLM's documentation entry, not a model
    const skip = (provider: string, reason: string): void => {
      skipped.push({ provider, model: key, field: '*', reason });
    };
    if (typeof raw !== 'object' || raw === null) {
      skip('', 'entry is not an object');
      continue;
    }
    const e = raw as Record<string, unknown>;
    const litellmProvider = typeof e.litellm_provider === 'string' ? e.litellm_provider : '';
    const provider = PROVIDERS[litellmProvider];
    if (!provider) {
      skip(litellmProvider, `litellm_provider "${litellmProvider}" is not a gateway provider`);
      continue;
    }
    const converted = convert(key, e, provider, litellmProvider, (model, field, value, reason) =>
      skipped.push({ provider, model, field, reason, value }),
    );
    if (converted instanceof Error) {
      skip(provider, converted.message);
      continue;
    }
    // Two keys can name one API id ("deepseek-chat" and "deepseek/deepseek-chat"): the first one wins.
    const id = `${provider}/${converted.model}`;
    const first = seen.get(id);
    if (first !== undefined) {
      skip(provider, `same API id ${id} as key ${first}, which was imported`);
      continue;
    }
    seen.set(id, key);
    models.push(converted);
  }
  return { models, skipped };
}

/** Parses the text of a LiteLLM price file and imports it. */
export function importLiteLlmText(text: string): LiteLlmImport {
  return importLiteLlm(JSON.parse(text));
}
