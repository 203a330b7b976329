import type { EndpointKey } from './endpoints';

/**
 * The provider-neutral usage vocabulary shared by provider modules, pricing, storage and plugins.
 *
 * Rule (from TensorZero's cache table): a field that is `undefined` was NOT reported by the provider;
 * `0` means the provider reported zero. Nothing downstream may turn "unknown" into "zero".
 */

/** Token and fee counts for one request, normalised across providers. */
export interface Usage {
  /**
   * Input tokens billed at the normal input rate, i.e. EXCLUDING cache reads and cache writes.
   * (OpenAI's prompt_tokens includes cached tokens; its parser subtracts them here so that
   * every bucket is disjoint and cost = sum(bucket x rate) never counts a token twice.)
   */
  inputTokens?: number;
  /** Output tokens including reasoning tokens (reasoning is billed at the output rate). */
  outputTokens?: number;
  /** Input tokens served from the provider's prompt cache (cache hits / cache reads). */
  cacheReadTokens?: number;
  /** Input tokens written to the prompt cache (5-minute writes on Anthropic). */
  cacheWriteTokens?: number;
  /** Input tokens written to a 1-hour cache (Anthropic ephemeral_1h). Part of no other bucket. */
  cacheWrite1hTokens?: number;
  /** Reasoning tokens, informational: already included in outputTokens. */
  reasoningTokens?: number;
  /** Search-engine citation tokens (Perplexity deep research), billed at their own rate. */
  citationTokens?: number;
  /** Number of web searches the provider ran and bills per query. */
  searchQueries?: number;
  /**
   * Billable tool and server calls by kind, priced by the catalog's tool fees: web_search and web_search_preview
   * (OpenAI web search calls), file_search (OpenAI file search calls), code_interpreter (OpenAI containers used),
   * code_execution (Anthropic code execution tool calls). Anthropic web searches stay in searchQueries.
   */
  toolCalls?: Readonly<Record<string, number>>;
  /** Image tokens of the input (gpt-image edits: the images sent), apart from its text in inputTokens. */
  inputImageTokens?: number;
  /** Image tokens generated (gpt-image), apart from any text output in outputTokens. */
  outputImageTokens?: number;
  /** Audio tokens of the input (gpt-4o-transcribe: the audio to transcribe), apart from its text in inputTokens. */
  inputAudioTokens?: number;
  /** Audio tokens generated (gpt-4o-mini-tts), apart from any text output in outputTokens. */
  outputAudioTokens?: number;
  /** Seconds of audio billed (whisper-1): whole seconds, rounded up as OpenAI reports them in usage.seconds. */
  audioSeconds?: number;
  /** Characters of text to speak (tts-1, tts-1-hd), counted from the request. */
  inputCharacters?: number;
  /** Images generated (dall-e-2, dall-e-3), with the size and quality they were asked at. */
  images?: number;
  imageSize?: string;
  imageQuality?: string;
  /** Perplexity request-fee tier (low | medium | high search context size) when reported. */
  searchContextSize?: string;
  /**
   * Cost the provider itself reported in USD, as an exact decimal string: OpenRouter's usage.cost, plus
   * cost_details.upstream_inference_cost for a BYOK request (whose usage.cost is only OpenRouter's fee).
   */
  providerCostUsd?: string;
  /**
   * The token buckets of each sampling iteration when the provider reports them (Anthropic usage.iterations:
   * a compaction step, server-tool loops). The buckets above are their sum; pricing uses the iterations to
   * pick a long-context rate per iteration, as the provider bills it.
   */
  iterations?: readonly IterationUsage[];
  /**
   * Rounding step of providerCostUsd, in USD, where the provider documents one (Perplexity: "0.001"): a figure
   * that differs from the computed cost by less than half a step plus 1% agrees with it.
   */
  providerCostStepUsd?: string;
  /**
   * The service tier the answer says served the request (OpenAI's top-level `service_tier`: default, flex,
   * priority, scale; Anthropic's `usage.service_tier`: standard, priority, batch), lower-cased. Not a count.
   */
  serviceTier?: string;
  /** The model that actually served the request, when the response names it (aggregators). */
  servedModel?: string;
  /**
   * Set when a stream reported an error event after its 200 status (Anthropic `event: error` such as
   * overloaded_error, an OpenAI `{"error": {...}}` chunk): the answer did not complete. The value is the
   * error's type or code when the event names one, else "stream_error". Not a count: pricing ignores it.
   */
  streamError?: string;
}

/** The counts audio and image answers (or their requests) are billed by, beside the text token buckets. */
export const MEDIA_UNIT_FIELDS = [
  'inputImageTokens',
  'outputImageTokens',
  'inputAudioTokens',
  'outputAudioTokens',
  'audioSeconds',
  'inputCharacters',
  'images',
] as const;

/** The token buckets of one sampling iteration (see Usage.iterations). */
export type IterationUsage = Pick<
  Usage,
  'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'cacheWrite1hTokens'
>;

/** One Server-Sent Event, as framed by core/sse.ts. `data` joins multi-line data with "\n". */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * Consumes a response stream event by event and yields the usage it reported.
 * `push` is called synchronously on the hot path: it must be cheap and must never throw.
 */
export interface StreamUsageAccumulator {
  push(event: SseEvent): void;
  /**
   * Usage reported by the stream, or undefined if it reported none and no error event. A stream that reported
   * an error event yields at least `{ streamError }` (see Usage.streamError).
   */
  result(): Usage | undefined;
  /** The generated text seen so far (for tokenizer estimation when the stream carries no usage). */
  text(): string;
}

/** What a provider module declares about reading usage from its wire formats. */
export interface UsageParser {
  /** Usage from a complete JSON response body of the given endpoint; undefined if none reported. */
  fromJson(endpoint: EndpointKey, body: unknown): Usage | undefined;
  /** A fresh accumulator for one SSE stream of the given endpoint. */
  createStreamAccumulator(endpoint: EndpointKey): StreamUsageAccumulator;
  /** How the provider's batch API answers (files, batches, message batches), when it has one. */
  batches?: BatchWire;
}

/** What a batch's creation or retrieval answered: its id, and the file its results are in (OpenAI). */
export interface BatchJobAnswer {
  id: string;
  outputFileId?: string;
}

/** One answered line of a batch's results: the client's custom_id, the endpoint and model it ran on, its usage. */
export interface BatchResultLine {
  customId: string;
  endpoint: EndpointKey;
  model: string | undefined;
  usage: Usage | undefined;
}

/** Reads a provider's batch answers: a batch object, and one parsed line of its results (undefined: not billed). */
export interface BatchWire {
  job(body: unknown): BatchJobAnswer | undefined;
  result(line: unknown): BatchResultLine | undefined;
}

/** Stable names of the gateway's endpoints (core/endpoints.ts). */
export type { EndpointKey } from './endpoints';

/** The tag value a record carries for a required tag it was sent without (missing_tags: record_untagged). */
export const UNTAGGED = '(untagged)';

/**
 * Built-in dimensions. `model` is the model that served the request: the one the response names when the
 * provider reports it (an aggregator such as OpenRouter), else the requested model; `requested_model` is the
 * model the client asked for. Any other name is a tag key (`tag:<key>` reaches a tag stored under a built-in's
 * name before such keys were refused).
 */
export const BUILTIN_DIMENSIONS = [
  'provider',
  'model',
  'requested_model',
  'endpoint',
  'workspace',
  'key_id',
  'status',
] as const;
export type BuiltinDimension = (typeof BUILTIN_DIMENSIONS)[number];
/** Former name of `model` (the served model), still accepted in group_by and filters. */
export const SERVED_MODEL_ALIAS = 'served_model';
/** Names a tag key may not take (the attribution plugin refuses them): group_by would read the built-in instead. */
export const RESERVED_TAG_KEYS: ReadonlySet<string> = new Set<string>([...BUILTIN_DIMENSIONS, SERVED_MODEL_ALIAS]);

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
  latencyMs: number;
  /** Time to first byte from upstream, ms; null if no byte arrived. */
  ttfbMs: number | null;
  tags: Record<string, string>;
  /** Gateway error code, or `upstream_<status>` for an upstream error; null on success. */
  errorCode: string | null;
}
