import type { Usage } from '../../core/usage';
import {
  arr,
  compact,
  minus,
  num,
  obj,
  reported,
  serviceTierAt,
  str,
  usageOf,
  type JsonObject,
  type UsageReader,
} from './read';
import { JsonStreamAccumulator, NoUsageStream, type EndpointUsage } from './sse-usage';

/**
 * OpenAI chat-completions usage, shared by every OpenAI-compatible provider.
 * prompt_tokens INCLUDES cached reads, cache writes and audio input; completion_tokens INCLUDES audio output
 * (gpt-4o-audio-preview, gpt-realtime): each is subtracted so the buckets are disjoint and audio is priced at its
 * own rate. The tier that served the answer is its top-level `service_tier`.
 */
export const chatUsage: UsageReader = (u, root) => {
  const prompt = num(u, 'prompt_tokens');
  const completion = num(u, 'completion_tokens');
  // DeepSeek reports cache hits as prompt_cache_hit_tokens (also part of prompt_tokens).
  const cached = num(u, 'prompt_tokens_details', 'cached_tokens') ?? num(u, 'prompt_cache_hit_tokens');
  const cacheWrite = num(u, 'prompt_tokens_details', 'cache_write_tokens');
  const audioIn = positive(num(u, 'prompt_tokens_details', 'audio_tokens'));
  const audioOut = positive(num(u, 'completion_tokens_details', 'audio_tokens'));
  const unreported = completion === undefined ? 0 : unreportedOutput(u, prompt, completion);
  return compact({
    inputTokens: minus(prompt, cached, cacheWrite, audioIn),
    outputTokens: completion === undefined ? undefined : (minus(completion, audioOut) ?? 0) + unreported,
    cacheReadTokens: cached,
    cacheWriteTokens: cacheWrite,
    inputAudioTokens: audioIn,
    outputAudioTokens: audioOut,
    serviceTier: serviceTierAt(root, 'service_tier'),
    // The output missing from completion_tokens is the thinking (Gemini, xAI): it is the reasoning count.
    reasoningTokens:
      num(u, 'completion_tokens_details', 'reasoning_tokens') ?? (unreported > 0 ? unreported : undefined),
    toolCalls: chatSearchCalls(root),
  });
};

/**
 * OpenAI's chat search models (gpt-4o-search-preview, gpt-4o-mini-search-preview) search the web on every request
 * and bill it as one web-search-preview call; their answers report no count. Other models: none.
 */
function chatSearchCalls(root: JsonObject | undefined): Record<string, number> | undefined {
  const model = str(root, 'model');
  return model !== undefined && SEARCH_MODEL.test(model) ? { web_search_preview: 1 } : undefined;
}

/**
 * A count above zero, else undefined: text-only answers report `audio_tokens: 0`, and an audio bucket of 0 would
 * only ask for an audio rate that a text model does not need.
 */
const positive = (n: number | undefined): number | undefined => (n !== undefined && n > 0 ? n : undefined);

const SEARCH_MODEL = /^(openai\/)?gpt-4o(-mini)?-search-preview\b/;

/**
 * Output tokens counted in total_tokens but not in completion_tokens. OpenAI always has total = prompt +
 * completion (so this is 0), but Gemini's OpenAI-compatible endpoint (see gemini/openai_compat_chat_completion.json;
 * xAI is reported to do the same) leaves thinking tokens out of completion_tokens while counting them in
 * total_tokens. They are billed as output, so they belong there.
 */
function unreportedOutput(u: JsonObject, prompt: number | undefined, completion: number): number {
  const total = num(u, 'total_tokens');
  if (total === undefined || prompt === undefined) return 0;
  const gap = total - prompt - completion;
  return gap > 0 ? gap : 0;
}

/** Embeddings report only prompt_tokens (and total_tokens); there is no output side. */
export const embeddingsUsage: UsageReader = (u) => compact({ inputTokens: num(u, 'prompt_tokens') });

/**
 * A chat-completions SSE stream. Usage arrives in a final `choices: []` chunk (OpenAI include_usage) or,
 * cumulatively, in every chunk (Perplexity): the last usage object seen wins. `"usage": null` is skipped.
 * Groq sends the usage of a stream without include_usage under `x_groq.usage` of its last chunk (with
 * include_usage in both places, the same counts): read when there is no top-level usage.
 */
export class ChatStream extends JsonStreamAccumulator {
  constructor(private readonly read: UsageReader = chatUsage) {
    super();
  }

  protected readUsage(chunk: JsonObject): void {
    const usage = obj(chunk, 'usage') ?? obj(chunk, 'x_groq', 'usage');
    if (usage) this.usage = reported(this.read(usage, chunk)) ?? this.usage;
  }

  /** Everything the model generated in this chunk's deltas, for tokenizer estimation when no usage arrives. */
  protected textOf(chunk: JsonObject): string | undefined {
    const choices = arr(chunk, 'choices');
    if (!choices) return undefined;
    let text = '';
    for (const choice of choices) {
      const delta = obj(choice, 'delta');
      if (!delta) continue;
      // reasoning_content: DeepSeek; reasoning: OpenRouter / Groq.
      for (const key of DELTA_TEXT_KEYS) text += str(delta, key) ?? '';
      for (const call of arr(delta, 'tool_calls') ?? []) text += str(call, 'function', 'arguments') ?? '';
      text += str(delta, 'function_call', 'arguments') ?? '';
    }
    return text;
  }
}

const DELTA_TEXT_KEYS = ['reasoning_content', 'reasoning', 'content', 'refusal'] as const;

/** Chat completions, JSON and SSE, with a provider's own reader (Perplexity and OpenRouter add fields). */
export function chatEndpoint(read: UsageReader = chatUsage): EndpointUsage {
  return {
    fromJson: (body): Usage | undefined => usageOf(body, read),
    stream: () => new ChatStream(read),
  };
}

export function embeddingsEndpoint(read: UsageReader = embeddingsUsage): EndpointUsage {
  return {
    fromJson: (body): Usage | undefined => usageOf(body, read),
    stream: () => new NoUsageStream(), // embeddings never stream
  };
}
