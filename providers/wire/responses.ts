import type { SseEvent, Usage } from '../../core/usage';
import { compact, minus, num, obj, reported, str, usageOf, type JsonObject, type UsageReader } from './read';
import { JsonStreamAccumulator, type EndpointUsage } from './sse-usage';

/** Responses API usage: input_tokens INCLUDES input_tokens_details.cached_tokens, subtracted here. */
export const responsesUsage: UsageReader = (u) => {
  const cached = num(u, 'input_tokens_details', 'cached_tokens');
  const cacheWrite = num(u, 'input_tokens_details', 'cache_write_tokens');
  return compact({
    inputTokens: minus(num(u, 'input_tokens'), cached, cacheWrite),
    outputTokens: num(u, 'output_tokens'),
    cacheReadTokens: cached,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: num(u, 'output_tokens_details', 'reasoning_tokens'),
  });
};

/** Terminal events; each carries the final `response` object with its usage (failed/incomplete are billed too). */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Deltas of generated text: visible text, refusals and tool-call arguments. */
const TEXT_DELTAS = new Set([
  'response.output_text.delta',
  'response.refusal.delta',
  'response.function_call_arguments.delta',
]);

/**
 * A Responses API SSE stream. OpenAI names events with `event:` lines (used to skip parsing the large
 * created/in_progress/done events); OpenRouter sends data-only events, so the JSON `type` decides.
 */
export class ResponsesStream extends JsonStreamAccumulator {
  constructor(private readonly read: UsageReader = responsesUsage) {
    super();
  }

  protected override wants(event: SseEvent): boolean {
    return event.event === undefined || TERMINAL.has(event.event) || TEXT_DELTAS.has(event.event);
  }

  protected readUsage(json: JsonObject): void {
    const type = str(json, 'type');
    if (type === undefined || !TERMINAL.has(type)) return;
    const response = obj(json, 'response');
    const usage = obj(response, 'usage');
    if (response && usage) this.usage = reported(this.read(usage, response)) ?? this.usage;
  }

  protected textOf(json: JsonObject): string | undefined {
    const type = str(json, 'type');
    return type !== undefined && TEXT_DELTAS.has(type) ? str(json, 'delta') : undefined;
  }
}

export function responsesEndpoint(read: UsageReader = responsesUsage): EndpointUsage {
  return {
    fromJson: (body): Usage | undefined => usageOf(body, read),
    stream: () => new ResponsesStream(read),
  };
}
