import type { SseEvent, Usage } from '../../core/usage';
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
import { JsonStreamAccumulator, type EndpointUsage } from './sse-usage';

/**
 * The hosted-tool calls a response made, billed per call or per container: web searches (`web_search_call`
 * items, under the name of the tool the request declared: `web_search`, or `web_search_preview` billed at its own
 * rate), file searches (`file_search_call`), and code interpreter containers (the distinct `container_id`s of the
 * `code_interpreter_call` items). Undefined when there are none.
 */
export function responsesToolCalls(root: JsonObject): Record<string, number> | undefined {
  const output = arr(root, 'output');
  if (!output) return undefined;
  const preview = (arr(root, 'tools') ?? []).some((t) => str(t, 'type')?.startsWith('web_search_preview'));
  const calls: Record<string, number> = {};
  const containers = new Set<string>();
  for (const item of output) {
    const type = str(item, 'type');
    if (type === 'web_search_call')
      calls[preview ? 'web_search_preview' : 'web_search'] =
        (calls[preview ? 'web_search_preview' : 'web_search'] ?? 0) + 1;
    else if (type === 'file_search_call') calls.file_search = (calls.file_search ?? 0) + 1;
    else if (type === 'code_interpreter_call')
      containers.add(str(item, 'container_id') ?? `(item ${str(item, 'id') ?? containers.size})`);
  }
  if (containers.size > 0) calls.code_interpreter = containers.size;
  return Object.keys(calls).length > 0 ? calls : undefined;
}

/**
 * Responses API usage: input_tokens INCLUDES input_tokens_details.cached_tokens, subtracted here. The tier that
 * served the answer is the response's `service_tier` (a stream's response.created says "auto", its terminal
 * event the tier used).
 */
export const responsesUsage: UsageReader = (u, root) => {
  const cached = num(u, 'input_tokens_details', 'cached_tokens');
  const cacheWrite = num(u, 'input_tokens_details', 'cache_write_tokens');
  return compact({
    inputTokens: minus(num(u, 'input_tokens'), cached, cacheWrite),
    outputTokens: num(u, 'output_tokens'),
    cacheReadTokens: cached,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: num(u, 'output_tokens_details', 'reasoning_tokens'),
    toolCalls: responsesToolCalls(root),
    serviceTier: serviceTierAt(root, 'service_tier'),
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
