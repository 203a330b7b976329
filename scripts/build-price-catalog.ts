/**
 * Builds pricing/catalog.json from the price snapshot committed beside it, pricing/source/prices.yaml (its header
 * says where every value comes from and when it was read). Run after editing the snapshot; nothing at run time
 * reads the YAML, and test/unit/catalog-rebuild.test.ts checks the committed catalog is exactly what this writes:
 *
 *   npm run build:catalog                 # pricing/source/prices.yaml -> pricing/catalog.json
 *   node dist/scripts/build-price-catalog.js [prices.yaml] [catalog.json] [version]
 *
 * The YAML is parsed with the failsafe schema so every scalar stays the exact text written in the file:
 * prices never pass through a double. Every key of every entry is either mapped, carried in `skipped`
 * with a reason, or listed in INFORMATIONAL_KEYS; an unknown key stops the build.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { formatDecimal, isPlainDecimal, parseDecimal } from '../pricing/decimal';
import { catalogFileSchema, type CatalogModel, type SkippedEntry } from '../pricing/model-price';

type Raw = Record<string, unknown>;

/** Source provider naming -> gateway provider slug. */
const PROVIDER_SLUG: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  perplexity: 'perplexity',
  google: 'gemini',
  mistral: 'mistral',
  deepseek: 'deepseek',
  xai: 'xai',
  groq: 'groq',
  openrouter: 'openrouter',
};

/** Keys that are provenance or non-price facts: deliberately not carried (see catalog `notes`). */
const INFORMATIONAL_KEYS = new Set([
  'litellm_mode',
  'verified',
  'official_doc_check',
  'litellm_source_note',
  'prompt_cache_min_tokens',
]);

const MAPPED_KEYS = new Set([
  'provider',
  'model',
  'litellm_key',
  'mode',
  'input_per_1m',
  'output_per_1m',
  'cache_read_per_1m',
  'cache_write_per_1m',
  'cache_write_1h_per_1m',
  'context_window',
  'max_output_tokens',
  'long_context_tiers',
  'batch_per_1m',
  'flex_per_1m',
  'priority_per_1m',
  'request_fee_usd',
  'search_query_fee_usd',
  'web_search_tool_fee_usd',
  'other_token_rates',
  'non_token_pricing',
  'regional_processing_uplift_multiplier',
  'litellm_provider_specific_entry',
  'same_price_litellm_keys',
  'deprecation_date',
  'notes',
]);

/** Why a source field is not carried into the catalog from the snapshot. */
const SKIP_REASONS: Record<string, string> = {
  'other_token_rates.input_audio_per_1m':
    'audio input tokens are priced at their own rate (Usage.inputAudioTokens), but only where pricing/media-prices.json gives it with a checked source; prices update imports it',
  'other_token_rates.output_audio_per_1m':
    'audio output tokens are priced at their own rate (Usage.outputAudioTokens), but only where pricing/media-prices.json gives it with a checked source; prices update imports it',
  'other_token_rates.input_image_token_per_1m':
    'image tokens are priced at their own rate (Usage.inputImageTokens), but only where pricing/media-prices.json gives it with a checked source',
  'other_token_rates.output_image_token_per_1m':
    'image tokens are priced at their own rate (Usage.outputImageTokens), but only where pricing/media-prices.json gives it with a checked source',
  non_token_pricing:
    'per-second, per-character and per-image prices come from pricing/media-prices.json (each with its source), not from here; per-pixel pricing is not used',
  regional_processing_uplift_multiplier:
    'regional-processing multiplier: Usage does not report the processing region; standard rates are applied',
  litellm_provider_specific_entry:
    'inference-geo / fast-mode multipliers: Usage does not report them; standard rates are applied',
};

function str(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new Error(`${where}: expected a scalar, got ${JSON.stringify(v)}`);
  return v;
}

/** A price scalar as a canonical decimal string, refusing anything that is not a plain non-negative decimal. */
function price(v: unknown, where: string): string {
  const s = str(v, where);
  if (!isPlainDecimal(s)) throw new Error(`${where}: not a plain non-negative decimal: ${s}`);
  return formatDecimal(parseDecimal(s));
}

function int(v: unknown, where: string): number {
  const s = str(v, where);
  if (!/^\d+$/.test(s)) throw new Error(`${where}: not an integer: ${s}`);
  return Number(s);
}

/** "272k" -> 272000: LiteLLM's *_above_<N>k_tokens keys mean N x 1000 tokens. */
function threshold(v: unknown, where: string): number {
  const m = /^(\d+)k$/.exec(str(v, where));
  if (!m) throw new Error(`${where}: unexpected threshold ${String(v)}`);
  return Number(m[1]) * 1000;
}

function obj(v: unknown, where: string): Raw {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: expected a mapping`);
  return v as Raw;
}

function tierRates(v: unknown, where: string): NonNullable<CatalogModel['service_tiers']>['batch'] {
  const o = obj(v, where);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(o)) {
    if (!['input', 'output', 'cache_read', 'cache_write'].includes(k)) throw new Error(`${where}.${k}: unknown`);
    out[k] = price(val, `${where}.${k}`);
  }
  return out;
}

/** Per-token extras and per-request / per-query fees; an extra rate with no catalog field is skipped with its reason. */
function addFees(e: Raw, at: string, out: CatalogModel, skip: (field: string, value: unknown) => void): void {
  if (e.other_token_rates !== undefined) {
    for (const [k, v] of Object.entries(obj(e.other_token_rates, `${at}.other_token_rates`))) {
      if (k === 'citation_per_1m') out.citation = price(v, `${at}.other_token_rates.${k}`);
      else if (k === 'reasoning_output_per_1m') out.reasoning = price(v, `${at}.other_token_rates.${k}`);
      else skip(`other_token_rates.${k}`, v);
    }
  }
  if (e.request_fee_usd !== undefined) {
    const f = obj(e.request_fee_usd, `${at}.request_fee_usd`);
    if (f.per_request_by_search_context_size !== undefined) {
      const t = obj(f.per_request_by_search_context_size, `${at}.request_fee_usd.per_request_by_search_context_size`);
      out.request_fee = {
        low: price(t.low, `${at}.request_fee.low`),
        medium: price(t.medium, `${at}.request_fee.medium`),
        high: price(t.high, `${at}.request_fee.high`),
      };
    } else {
      out.request_fee = price(f.per_request, `${at}.request_fee_usd.per_request`);
    }
  }
  if (e.search_query_fee_usd !== undefined) {
    out.search_query_fee = price(obj(e.search_query_fee_usd, at).per_search_query, `${at}.search_query_fee_usd`);
  }
  // The web-search / grounding tool is billed per search the provider reports (Usage.searchQueries).
  if (e.web_search_tool_fee_usd !== undefined) {
    if (out.search_query_fee !== undefined) throw new Error(`${at}: two per-query fees`);
    out.search_query_fee = price(obj(e.web_search_tool_fee_usd, at).per_query, `${at}.web_search_tool_fee_usd`);
  }
}

/** The long-context tiers: each threshold with the rates that replace the base ones above it. */
function longContext(raw: unknown, at: string): NonNullable<CatalogModel['long_context']> {
  if (!Array.isArray(raw)) throw new Error(`${at}.long_context_tiers: expected a list`);
  return raw.map((entry, i) => {
    const t = obj(entry, `${at}.long_context_tiers[${i}]`);
    const w = `${at}.long_context_tiers[${i}]`;
    const tier: NonNullable<CatalogModel['long_context']>[number] = {
      above_input_tokens: threshold(t.applies_when_input_tokens_above, w),
    };
    const names: Record<string, keyof typeof tier> = {
      input_per_1m: 'input',
      output_per_1m: 'output',
      cache_read_per_1m: 'cache_read',
      cache_write_per_1m: 'cache_write',
      cache_write_1h_per_1m: 'cache_write_1h',
    };
    for (const [k, v] of Object.entries(t)) {
      if (k === 'applies_when_input_tokens_above') continue;
      const name = names[k];
      if (!name) throw new Error(`${w}.${k}: unknown`);
      (tier as Record<string, unknown>)[name] = price(v, `${w}.${k}`);
    }
    return tier;
  });
}

/** Same-price LiteLLM keys as API ids (the LiteLLM or provider prefix removed), the entry's own model left out. */
function aliasesOf(keys: unknown, at: string, litellmKey: string, model: string, providerPrefixes: string[]): string[] {
  const keyPrefix = litellmKey.endsWith(model) ? litellmKey.slice(0, litellmKey.length - model.length) : '';
  if (!Array.isArray(keys)) throw new Error(`${at}.same_price_litellm_keys: expected a list`);
  const aliases = new Set<string>();
  for (const k of keys) {
    let id = str(k, `${at}.same_price_litellm_keys`);
    for (const prefix of [keyPrefix, ...providerPrefixes]) {
      if (prefix && id.startsWith(prefix)) {
        id = id.slice(prefix.length);
        break;
      }
    }
    if (id !== model) aliases.add(id);
  }
  return [...aliases];
}

function convert(e: Raw, skipped: SkippedEntry[]): CatalogModel {
  const sourceProvider = str(e.provider, 'provider');
  const provider = PROVIDER_SLUG[sourceProvider];
  const model = str(e.model, 'model');
  const at = `${sourceProvider}/${model}`;
  if (!provider) throw new Error(`${at}: no gateway slug for provider ${sourceProvider}`);
  for (const k of Object.keys(e)) {
    if (!MAPPED_KEYS.has(k) && !INFORMATIONAL_KEYS.has(k)) throw new Error(`${at}: unhandled key ${k}`);
  }
  const skip = (field: string, value: unknown, reason = SKIP_REASONS[field]): void => {
    if (!reason) throw new Error(`${at}: no skip reason for ${field}`);
    skipped.push({ provider, model, field, reason, value });
  };

  const out: CatalogModel = { provider, model, kind: str(e.mode, `${at}.mode`) };
  const p = (key: string): string | undefined => (e[key] === undefined ? undefined : price(e[key], `${at}.${key}`));
  out.input = p('input_per_1m');
  out.output = p('output_per_1m');
  out.cache_read = p('cache_read_per_1m');
  out.cache_write = p('cache_write_per_1m');
  out.cache_write_1h = p('cache_write_1h_per_1m');

  addFees(e, at, out, skip);
  if (e.long_context_tiers !== undefined) out.long_context = longContext(e.long_context_tiers, at);
  const tiers: NonNullable<CatalogModel['service_tiers']> = {};
  if (e.batch_per_1m !== undefined) tiers.batch = tierRates(e.batch_per_1m, `${at}.batch_per_1m`);
  if (e.flex_per_1m !== undefined) tiers.flex = tierRates(e.flex_per_1m, `${at}.flex_per_1m`);
  if (e.priority_per_1m !== undefined) tiers.priority = tierRates(e.priority_per_1m, `${at}.priority_per_1m`);
  if (Object.keys(tiers).length > 0) out.service_tiers = tiers;

  for (const key of ['non_token_pricing', 'regional_processing_uplift_multiplier', 'litellm_provider_specific_entry']) {
    if (e[key] !== undefined) skip(key, e[key]);
  }

  if (e.context_window !== undefined) out.context_window = int(e.context_window, `${at}.context_window`);
  if (e.max_output_tokens !== undefined) out.max_output_tokens = int(e.max_output_tokens, `${at}.max_output_tokens`);
  if (e.deprecation_date !== undefined) out.deprecation_date = str(e.deprecation_date, `${at}.deprecation_date`);

  // Same-price LiteLLM keys become aliases, with the LiteLLM provider prefix removed (API ids).
  const litellmKey = str(e.litellm_key, `${at}.litellm_key`);
  out.litellm_key = litellmKey;
  if (e.same_price_litellm_keys !== undefined) {
    const aliases = aliasesOf(e.same_price_litellm_keys, at, litellmKey, model, [`${sourceProvider}/`, `${provider}/`]);
    if (aliases.length > 0) out.aliases = aliases;
  }

  const notes = Array.isArray(e.notes) ? e.notes.map((n) => str(n, `${at}.notes`)) : [];
  // "<dated id> is priced differently": keep the dated-snapshot fallback away from it.
  const distinct = notes.map((n) => /^(\S+) is priced differently/.exec(n)?.[1]).filter(Boolean);
  if (distinct.length > 0) out.distinct_snapshots = distinct as string[];
  const verified = typeof e.verified === 'string' && e.verified.startsWith('mirror-only') ? [e.verified] : [];
  const sourceNotes = [...notes, ...verified];
  if (sourceNotes.length > 0) out.source_note = sourceNotes.join(' | ');

  // Drop undefined keys so the JSON stays compact and stable.
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined)) as CatalogModel;
}

/** The project folder: this file runs as dist/scripts/build-price-catalog.js. */
const ROOT = join(__dirname, '..', '..');
export const SOURCE_SNAPSHOT = join(ROOT, 'pricing', 'source', 'prices.yaml');
export const BUNDLED_CATALOG = join(ROOT, 'pricing', 'catalog.json');

/** The text of catalog.json for a snapshot's YAML text, exactly as it is committed. */
export function buildCatalog(yamlText: string, version?: string): { text: string; models: number; skipped: number } {
  const doc = obj(parse(yamlText, { schema: 'failsafe' }), 'root');
  const meta = obj(doc.catalog, 'catalog');
  const values = obj(meta.source_values_from, 'catalog.source_values_from');
  const retrieved = str(values.litellm_main_fetched_at, 'litellm_main_fetched_at');
  if (!Array.isArray(doc.models)) throw new Error('models: expected a list');

  const skipped: SkippedEntry[] = [];
  const models = doc.models.map((m) => convert(obj(m, 'model'), skipped));
  const expected = int(meta.model_count, 'catalog.model_count');
  if (models.length !== expected) throw new Error(`model_count says ${expected}, found ${models.length}`);
  const seen = new Set<string>();
  for (const m of models) {
    const key = `${m.provider}/${m.model}`;
    if (seen.has(key)) throw new Error(`duplicate ${key}`);
    seen.add(key);
  }

  const catalog = catalogFileSchema.parse({
    // The snapshot's own version when it was edited after transcription, else the first one of its date.
    version: version ?? (meta.version === undefined ? `${retrieved.slice(0, 10)}.1` : str(meta.version, 'version')),
    source: `${str(meta.source_file, 'source_file')} as mirrored by ${str(values.repo, 'repo').split(' ')[0]}@${str(values.commit, 'commit')} (transcribed in prices.yaml)`,
    retrieved,
    currency: 'USD',
    unit: 'per 1M tokens',
    notes: [
      'Prices are decimal strings in USD per 1M tokens; request_fee and search_query_fee are USD per request / per query.',
      'long_context.above_input_tokens: LiteLLM *_above_<N>k_tokens read as N x 1000 prompt tokens, as LiteLLM applies them.',
      'search_query_fee comes from the source web-search / grounding tool fee (per query) or the Perplexity Deep Research per-search fee.',
      'service_tiers (batch / flex / priority) price an answer that names its tier (OpenAI service_tier, Anthropic usage.service_tier); a tier an entry lacks leaves such an answer unpriced.',
      'Not carried (no price meaning): verified, official_doc_check, litellm_source_note, litellm_mode, prompt_cache_min_tokens.',
      'created is unknown in the source and omitted; the catalog reports the retrieval date instead.',
    ],
    models,
    skipped,
  });
  return { text: JSON.stringify(catalog, null, 2) + '\n', models: models.length, skipped: skipped.length };
}

function main(): void {
  const [yamlPath = SOURCE_SNAPSHOT, outPath = BUNDLED_CATALOG, version] = process.argv.slice(2);
  const built = buildCatalog(readFileSync(yamlPath, 'utf8'), version);
  writeFileSync(outPath, built.text);
  process.stdout.write(`${outPath}: ${built.models} models, ${built.skipped} skipped fields\n`);
}

if (require.main === module) main();
