import {
  openaiUsageParser,
  type EndpointKey,
  type SseEvent,
  type StreamUsageAccumulator,
  type Usage,
  type UsageParser,
} from 'tollgate';

/**
 * Acme's chat completions are OpenAI-shaped except for usage, which it reports as
 *   "usage": { "input_tokens": 120, "cached_input_tokens": 100, "output_tokens": 30 }
 * (cached_input_tokens are part of input_tokens), in the JSON body and in the last chunk of a stream.
 * Embeddings are exactly OpenAI's, so that endpoint reuses the built-in parser.
 */
export function readAcmeUsage(body: unknown): Usage | undefined {
  const u = field(body, 'usage');
  const input = count(u, 'input_tokens');
  const cached = count(u, 'cached_input_tokens');
  const output = count(u, 'output_tokens');
  if (input === undefined && output === undefined) return undefined;
  const usage: Usage = {};
  // Buckets must be disjoint: cached tokens are priced at the cache rate, the rest at the input rate.
  if (input !== undefined) usage.inputTokens = Math.max(0, input - (cached ?? 0));
  if (cached !== undefined) usage.cacheReadTokens = cached;
  if (output !== undefined) usage.outputTokens = output;
  return usage;
}

/** Reads one stream: the last usage seen wins, and the generated text is kept for estimation. */
class AcmeStream implements StreamUsageAccumulator {
  private usage: Usage | undefined;
  private generated = '';

  // Called on the hot path for every event: cheap, and never throws.
  push(event: SseEvent): void {
    if (event.data === '[DONE]') return;
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      return;
    }
    const choices = field(chunk, 'choices');
    if (Array.isArray(choices)) {
      for (const choice of choices) {
        const content = field(field(choice, 'delta'), 'content');
        if (typeof content === 'string') this.generated += content;
      }
    }
    this.usage = readAcmeUsage(chunk) ?? this.usage;
  }

  result(): Usage | undefined {
    return this.usage;
  }

  text(): string {
    return this.generated;
  }
}

export const acmeUsageParser: UsageParser = {
  fromJson(endpoint: EndpointKey, body: unknown): Usage | undefined {
    if (endpoint === 'embeddings') return openaiUsageParser.fromJson(endpoint, body);
    return endpoint === 'chat.completions' ? readAcmeUsage(body) : undefined;
  },
  createStreamAccumulator(endpoint: EndpointKey): StreamUsageAccumulator {
    return endpoint === 'chat.completions' ? new AcmeStream() : openaiUsageParser.createStreamAccumulator(endpoint);
  },
};

function field(v: unknown, key: string): unknown {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
}

function count(v: unknown, key: string): number | undefined {
  const n = field(v, key);
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
}
