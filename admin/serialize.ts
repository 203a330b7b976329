import type { UsageRecord } from '../records/usage-record';
import { formatUsd } from '../pricing/money';
import { costStatus, knownCost } from '../storage/counters';
import { knownListCost, listCostUnknownCount } from '../storage/list-cost';
import { uncountedRanges } from '../storage/query/coverage';
import type { UsageGroupRow, UsageQuery, UsageStore, UsageTotals } from '../storage/store';

/**
 * JSON shapes of the admin API. Money goes out twice: `cost_usd` as an exact decimal string (never a float),
 * and `cost_pico` (integer pico-USD, as a string) for exact sums on the client side. Unknown stays null: a
 * group whose records are all unpriced or not counted has cost_usd and cost_pico null (never "0"); `cost_status`
 * says how much of a group's cost is known (known | lower_bound: some records unpriced or not counted, the sum of the
 * others | unknown | not_counted: all are audio or images with nothing to price them by), `unpriced_count` and
 * `not_counted_count` how many records lack a cost.
 * Beside the cost, `list_cost_usd` (and `list_cost_pico`) is the same records' cost at the catalog's list price, before
 * a negotiated discount (pricing.discounts), and `discount_usd` the difference; `list_cost_unknown_count` counts the
 * records priced before records kept a list cost, included in the list cost at their cost (storage/list-cost.ts).
 */
export function totalsJson(t: UsageTotals) {
  const cost = knownCost(t);
  const list = knownListCost(t);
  return {
    requests: t.requests,
    input_tokens: t.inputTokens,
    output_tokens: t.outputTokens,
    cache_read_tokens: t.cacheReadTokens,
    cache_write_tokens: t.cacheWriteTokens,
    cache_write_1h_tokens: t.cacheWrite1hTokens,
    reasoning_tokens: t.reasoningTokens,
    citation_tokens: t.citationTokens,
    search_queries: t.searchQueries,
    cost_usd: cost === null ? null : formatUsd(cost),
    cost_pico: cost === null ? null : cost.toString(),
    cost_status: costStatus(t),
    list_cost_usd: list === null ? null : formatUsd(list),
    list_cost_pico: list === null ? null : list.toString(),
    discount_usd: cost === null ? null : formatUsd(t.discountPico),
    list_cost_unknown_count: listCostUnknownCount(t),
    unpriced_count: t.unknownCostCount,
    estimated_count: t.estimatedCount,
    partial_count: t.partialCount,
    error_count: t.errorCount,
    // Records whose provider-reported cost and the cost computed from tokens and prices differ by more than 1%.
    cost_disagreement_count: t.costDisagreementCount,
    not_counted_count: t.notCountedCount,
  };
}

export function groupRowJson(row: UsageGroupRow) {
  return {
    group: row.group,
    ...(row.bucket !== undefined ? { bucket: new Date(row.bucket).toISOString() } : {}),
    ...totalsJson(row),
  };
}

export function recordJson(r: UsageRecord) {
  return {
    id: r.id,
    time: new Date(r.ts).toISOString(),
    workspace: r.workspaceId,
    key_id: r.keyId,
    provider: r.provider,
    model: r.model,
    served_model: r.servedModel,
    endpoint: r.endpoint,
    status: r.status,
    streamed: r.streamed,
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    cache_read_tokens: r.cacheReadTokens,
    cache_write_tokens: r.cacheWriteTokens,
    cache_write_1h_tokens: r.cacheWrite1hTokens,
    reasoning_tokens: r.reasoningTokens,
    citation_tokens: r.citationTokens,
    search_queries: r.searchQueries,
    search_context_size: r.searchContextSize ?? null,
    cost_usd: r.costPico === null ? null : formatUsd(r.costPico),
    cost_pico: r.costPico === null ? null : r.costPico.toString(),
    // Null when the cost is unknown, and on records priced before records kept a list cost.
    list_cost_usd: r.listCostPico == null ? null : formatUsd(r.listCostPico),
    provenance: r.provenance,
    price_version: r.priceVersion,
    latency_ms: r.latencyMs,
    ttfb_ms: r.ttfbMs,
    upstream_ms: r.upstreamMs ?? null,
    tags: r.tags,
    error_code: r.errorCode,
    usage_source: r.usageSource ?? null,
    provider_cost_usd:
      r.providerCostPico === undefined || r.providerCostPico === null ? null : formatUsd(r.providerCostPico),
    cost_disagrees: r.costDisagrees ?? null,
    tool_calls: r.toolCalls ?? null,
    price_id: r.priceId ?? null,
    service_tier: r.serviceTier ?? null,
    input_audio_tokens: r.inputAudioTokens ?? null,
    output_audio_tokens: r.outputAudioTokens ?? null,
    generation_id: r.generationId ?? null,
  };
}

/**
 * What retention left out of a usage answer: `records_kept_from`, the cut-off before which per-request records were
 * deleted (null while none were), and `uncounted`, the parts of the asked range that only those records could have
 * answered (storage/query/coverage.ts); everything else in the range is counted exactly, from the rollups.
 */
export async function retentionJson(store: Pick<UsageStore, 'recordsKeptFrom'>, queries: readonly UsageQuery[]) {
  const keptFrom = await store.recordsKeptFrom();
  return {
    records_kept_from: keptFrom === null ? null : new Date(keptFrom).toISOString(),
    uncounted: uncountedRanges(queries, keptFrom).map((r) => ({
      from: new Date(r.from).toISOString(),
      to: new Date(r.to).toISOString(),
    })),
  };
}
