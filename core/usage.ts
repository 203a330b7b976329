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
  /** The id an aggregator gave its answer (OpenRouter's `gen-…`: its generation API looks it up). Not a count. */
  generationId?: string;
  /** The model that actually served the request, when the response names it (aggregators). */
  servedModel?: string;
  /**
   * Set when a stream reported an error event after its 200 status (Anthropic `event: error` such as
   * overloaded_error, an OpenAI `{"error": {...}}` chunk): the answer did not complete. The value is the
   * error's type or code when the event names one, else "stream_error". Not a count: pricing ignores it.
   */
  streamError?: string;
}

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
