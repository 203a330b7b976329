import { endpointByKey } from '../core/endpoints';
import { PROVIDER_REPORTED, type UsageRecord, type UsageSource } from '../records/usage-record';
import type { Usage } from '../core/usage';
import type { Repricing } from '../storage/store';
import type { PriceCatalog } from './catalog';
import { priceUsage } from './cost';
import { providerCostStep } from './cost-rounding';
import { formatUsd } from './money';

export { PROVIDER_REPORTED } from '../records/usage-record';

const TOKEN_COLUMNS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
] as const;

/**
 * How a stored record's counts were obtained. Records written before migration 008 do not say: tokenizer counts
 * made them 'estimated' or 'partial'; a record with no count has none; a non-streamed answer always carried the
 * provider's usage, and a measured one did. A streamed record left unpriced may have been counted either way, so
 * it is taken as tokenizer counts: repricing never vouches for counts it cannot trace to the provider.
 */
export function storedUsageSource(r: UsageRecord): UsageSource {
  if (r.usageSource) return r.usageSource;
  if (TOKEN_COLUMNS.every((f) => r[f] === null)) return 'none';
  if (r.provenance === 'estimated' || r.provenance === 'partial') return 'tokenizer';
  return !r.streamed || r.provenance === 'measured' ? 'provider' : 'tokenizer';
}

/**
 * The cost a stored record has under today's catalog, from its raw counts. Left alone: failures (zero by
 * definition) and endpoints not counted. A record without counts is unpriced, whatever it said before (never a
 * $0 or a request fee alone); tokenizer counts stay estimated and a cut stream stays partial once priced. The
 * provider's own figure (kept since migration 008; on older records the cost itself when it was
 * provider-reported) is compared again and used under the rules of pricing/cost.ts.
 */
export function repriceRecord(catalog: PriceCatalog, r: UsageRecord): Repricing | undefined {
  if (r.provenance === 'failed' || r.provenance === 'not_counted') return undefined;
  // Audio and images are priced by units a record does not keep (seconds, characters, images, image tokens).
  if (!r.provider || !r.endpoint || !endpointByKey(r.endpoint).costCounted) return undefined;
  const usageSource = storedUsageSource(r);
  const providerCost = r.providerCostPico ?? (r.priceVersion === PROVIDER_REPORTED ? r.costPico : null);
  if (usageSource === 'none' && providerCost === null) {
    return {
      costPico: null,
      listCostPico: null,
      provenance: r.provenance === 'partial' ? 'partial' : 'unpriced',
      priceVersion: null,
      usageSource,
      priceId: null,
      costDisagrees: null,
    };
  }
  const model = r.servedModel ?? r.model;
  // The price in force at the record's time: repricing an old month after a price change keeps its old price.
  const price = model ? catalog.lookupAt(r.provider, model, r.ts) : undefined;
  // The record's input and output counts include their audio tokens, priced apart (migration 012).
  const usage: Usage = {
    inputTokens: r.inputTokens === null ? undefined : r.inputTokens - (r.inputAudioTokens ?? 0),
    outputTokens: r.outputTokens === null ? undefined : r.outputTokens - (r.outputAudioTokens ?? 0),
    inputAudioTokens: r.inputAudioTokens ?? undefined,
    outputAudioTokens: r.outputAudioTokens ?? undefined,
    // The tier the answer named: its rates, as when it was recorded (none on records older than migration 012).
    serviceTier: r.serviceTier ?? undefined,
    cacheReadTokens: r.cacheReadTokens ?? undefined,
    cacheWriteTokens: r.cacheWriteTokens ?? undefined,
    cacheWrite1hTokens: r.cacheWrite1hTokens ?? undefined,
    reasoningTokens: r.reasoningTokens ?? undefined,
    citationTokens: r.citationTokens ?? undefined,
    searchQueries: r.searchQueries ?? undefined,
    // The request fee's tier; unknown on records older than migration 003 (priced at the default, low).
    searchContextSize: r.searchContextSize ?? undefined,
    toolCalls: r.toolCalls ?? undefined,
    providerCostUsd: providerCost === null ? undefined : formatUsd(providerCost),
    providerCostStepUsd: providerCost === null ? undefined : providerCostStep(r.provider),
  };
  const priced = priceUsage(
    usageSource === 'none' ? undefined : price,
    usageSource === 'none' ? { providerCostUsd: usage.providerCostUsd } : usage,
    {
      endpoint: r.endpoint,
      counted: endpointByKey(r.endpoint).costCounted,
    },
  );
  const costPico = priced.costPico;
  const provenance =
    r.provenance === 'partial'
      ? 'partial'
      : costPico === null
        ? 'unpriced'
        : usageSource === 'tokenizer' || priced.estimated
          ? 'estimated'
          : 'measured';
  return {
    costPico,
    listCostPico: costPico === null ? null : (priced.listCostPico ?? null),
    provenance,
    priceVersion:
      costPico === null
        ? null
        : priced.provenanceHint === 'provider_reported'
          ? PROVIDER_REPORTED
          : price
            ? catalog.versionOf(price)
            : catalog.version,
    usageSource,
    priceId: priced.priceId ?? null,
    costDisagrees: priced.costDisagrees ?? null,
  };
}
