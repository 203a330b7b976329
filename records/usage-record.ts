import type { EndpointKey } from '../core/endpoints';
import type { Usage } from '../core/usage';

/** The counts audio and image answers (or their requests) are billed by, beside the text token buckets. */
export const MEDIA_UNIT_FIELDS = [
  'inputImageTokens',
  'outputImageTokens',
  'inputAudioTokens',
  'outputAudioTokens',
  'audioSeconds',
  'inputCharacters',
  'images',
] as const satisfies readonly (keyof Usage)[];

/** UsageRecord.priceVersion of a record whose cost is the provider's own figure (an aggregator's usage.cost). */
export const PROVIDER_REPORTED = 'provider-reported';

/**
 * Where a record's cost comes from.
 * - measured: provider-reported usage x catalog price (or the provider's own reported cost)
 * - estimated: usage counted by the tokenizer because the provider reported none
 * - partial: the stream did not complete (client disconnect, upstream reset, or an error event mid-stream);
 *   the output count covers at least what was streamed
 * - unpriced: usage known but the model has no price; cost is NULL, never shown as $0
 * - not_counted: audio or images whose answer and request give nothing to price them by (no usage tokens, no
 *   seconds, characters or images): passed through, cost unknown and shown as "not counted", never as $0
 * - failed: the request failed (gateway or upstream error); cost is zero
 */
export type CostProvenance = 'measured' | 'estimated' | 'partial' | 'unpriced' | 'not_counted' | 'failed';

/** How a record's token counts were obtained (UsageRecord.usageSource). */
export type UsageSource = 'provider' | 'tokenizer' | 'none';

/**
 * Money is an integer count of pico-dollars (1e-12 USD), carried as bigint in code.
 * Catalog prices are USD per 1M tokens; a price of P USD/1M tokens is exactly P*1e6 pico-USD per token
 * for every price with at most 6 decimals, so cost = sum(tokens x rate) is exact integer arithmetic.
 */
export type PicoUsd = bigint;

/** The record stored for every request that reached the gateway. */
export interface UsageRecord {
  /** The x-gateway-request-id. */
  id: string;
  /** Request start, epoch milliseconds. */
  ts: number;
  workspaceId: string | null;
  keyId: string | null;
  provider: string | null;
  /** Model the client asked for. */
  model: string | null;
  /** Model that served the request (aggregators); defaults to the requested model. */
  servedModel: string | null;
  endpoint: EndpointKey | null;
  status: number;
  streamed: boolean;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  cacheWrite1hTokens: number | null;
  reasoningTokens: number | null;
  citationTokens: number | null;
  searchQueries: number | null;
  /**
   * Perplexity's reported search context size (low | medium | high), which picks its request fee; kept so
   * that repricing charges the same tier. Absent on records spilled by a build older than migration 003.
   */
  searchContextSize?: string | null;
  /** Cost in pico-USD; null when unknown (unpriced). */
  costPico: PicoUsd | null;
  /**
   * The cost at the catalog's list price, before a negotiated discount (pricing.discounts): equal to costPico when no
   * discount applied, null when the cost is unknown. Absent (null) on records written before migration 022.
   */
  listCostPico?: PicoUsd | null;
  provenance: CostProvenance;
  /** Price catalog version the cost was computed with (null when no price was used). */
  priceVersion: string | null;
  /**
   * How the token counts were obtained, apart from whether they were priced (`provenance`): from the provider's
   * usage, counted by the tokenizer, or not at all. Absent on records written before migration 008.
   */
  usageSource?: UsageSource | null;
  /** The cost the provider itself reported (OpenRouter, Perplexity usage.cost), whichever figure costPico uses. */
  providerCostPico?: PicoUsd | null;
  /**
   * True when the provider's figure and the one computed from tokens and prices differ by more than 1%, false
   * when both are known and agree, null when there was nothing to compare.
   */
  costDisagrees?: boolean | null;
  /** Billable tool and server calls by kind (web_search, file_search, code_interpreter ...), null when none. */
  toolCalls?: Readonly<Record<string, number>> | null;
  /** provider/model of the catalog entry whose prices were used (a dated snapshot names its family's entry). */
  priceId?: string | null;
  /**
   * The service tier the answer says served the request (flex, priority, batch ...; Usage.serviceTier), null when
   * it named none. Absent on records built before migration 012.
   */
  serviceTier?: string | null;
  /** Audio tokens of the input, a part of inputTokens (audio chats), null when none were reported. */
  inputAudioTokens?: number | null;
  /** Audio tokens generated, a part of outputTokens, null when none were reported. */
  outputAudioTokens?: number | null;
  /**
   * The id an aggregator gave its answer (OpenRouter's `gen-…`), by which reconciliation reads what the request
   * cost. Absent on records built before migration 017.
   */
  generationId?: string | null;
  latencyMs: number;
  /**
   * The provider's own time, ms: from sending the request upstream to the last byte of its answer (for a stream, its
   * end as relayed), so that latencyMs - upstreamMs is the gateway's overhead. Null when nothing was sent upstream;
   * absent on records built before migration 019.
   */
  upstreamMs?: number | null;
  /** Time to first byte from upstream, ms; null if no byte arrived. */
  ttfbMs: number | null;
  tags: Record<string, string>;
  /** Gateway error code, or `upstream_<status>` for an upstream error; null on success. */
  errorCode: string | null;
}
