import { endpointByKey } from '../core/endpoints';
import { PROVIDER_REPORTED, type UsageRecord } from '../core/usage';
import type { Repricing } from '../storage/store';
import type { PriceCatalog } from './catalog';
import { priceUsage } from './cost';

export { PROVIDER_REPORTED } from '../core/usage';

/**
 * The cost a stored record has under today's catalog, from its raw token counts. Records that carry no
 * repriceable cost are left alone: failures (zero by definition), endpoints not counted, and costs the
 * provider itself reported. A record that was unpriced becomes measured once its model has a price.
 */
export function repriceRecord(catalog: PriceCatalog, r: UsageRecord): Repricing | undefined {
  if (r.provenance === 'failed' || r.provenance === 'not_counted' || r.priceVersion === PROVIDER_REPORTED) return undefined;
  if (!r.provider || !r.endpoint) return undefined;
  const model = r.servedModel ?? r.model;
  const price = model ? catalog.lookup(r.provider, model) : undefined;
  const usage = {
    inputTokens: r.inputTokens ?? undefined,
    outputTokens: r.outputTokens ?? undefined,
    cacheReadTokens: r.cacheReadTokens ?? undefined,
    cacheWriteTokens: r.cacheWriteTokens ?? undefined,
    cacheWrite1hTokens: r.cacheWrite1hTokens ?? undefined,
    reasoningTokens: r.reasoningTokens ?? undefined,
    citationTokens: r.citationTokens ?? undefined,
    searchQueries: r.searchQueries ?? undefined,
    // The request fee's tier; unknown on records older than migration 003 (priced at the default, low).
    searchContextSize: r.searchContextSize ?? undefined,
  };
  const priced = priceUsage(price, usage, { endpoint: r.endpoint, counted: endpointByKey(r.endpoint).costCounted });
  const costPico = priced.costPico;
  const provenance = r.provenance === 'estimated' || r.provenance === 'partial' ? r.provenance : costPico === null ? 'unpriced' : 'measured';
  return { costPico, provenance, priceVersion: costPico === null ? null : catalog.version };
}
