import type { SseEvent, Usage } from '../../core/usage';
import { compact, num, obj, reported, str, type JsonObject } from './read';
import { JsonStreamAccumulator, byEndpoint, type EndpointUsage } from './sse-usage';

/** The counts an Anthropic usage object can carry; undefined = not reported (yet). */
interface Counts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
  cache1h?: number;
  cache5m?: number;
  webSearches?: number;
}

function readCounts(u: JsonObject): Counts {
  return {
    input: num(u, 'input_tokens'),
    output: num(u, 'output_tokens'),
    cacheRead: num(u, 'cache_read_input_tokens'),
    cacheCreation: num(u, 'cache_creation_input_tokens'),
    cache1h: num(u, 'cache_creation', 'ephemeral_1h_input_tokens'),
    cache5m: num(u, 'cache_creation', 'ephemeral_5m_input_tokens'),
    webSearches: num(u, 'server_tool_use', 'web_search_requests'),
  };
}

/**
 * Anthropic's input_tokens already EXCLUDES cache reads and writes, so it is taken as is. Cache writes are
 * split by TTL when the cache_creation breakdown is present: 1-hour writes are billed at their own rate.
 */
function toUsage(c: Counts): Usage {
  let write = c.cacheCreation ?? c.cache5m;
  if (c.cache1h !== undefined) {
    write = c.cacheCreation !== undefined ? Math.max(0, c.cacheCreation - c.cache1h) : c.cache5m;
  }
  return compact({
    inputTokens: c.input,
    outputTokens: c.output,
    cacheReadTokens: c.cacheRead,
    cacheWriteTokens: write,
    cacheWrite1hTokens: c.cache1h,
    // Server-side web search is billed per request.
    searchQueries: c.webSearches,
  });
}

export function anthropicUsage(u: JsonObject): Usage {
  return toUsage(readCounts(u));
}

/** Events worth parsing; ping, content_block_start/stop and message_stop carry neither usage nor text. */
const WANTED = new Set(['message_start', 'message_delta', 'content_block_delta']);

/**
 * A messages SSE stream. message_start carries input and cache counts; message_delta carries the CUMULATIVE
 * output_tokens and may restate (or, with server tools, update) input and cache counts. Each field keeps the
 * latest value reported; nothing is summed.
 */
export class MessagesStream extends JsonStreamAccumulator {
  private readonly counts: Counts = {};

  protected override wants(event: SseEvent): boolean {
    return event.event === undefined || WANTED.has(event.event);
  }

  protected readUsage(json: JsonObject): void {
    const type = str(json, 'type');
    if (type !== 'message_start' && type !== 'message_delta') return;
    const usage = type === 'message_start' ? obj(json, 'message', 'usage') : obj(json, 'usage');
    if (!usage) return;
    const next = readCounts(usage);
    for (const key of Object.keys(next) as (keyof Counts)[]) {
      if (next[key] !== undefined) this.counts[key] = next[key];
    }
    this.usage = reported(toUsage(this.counts));
  }

  protected textOf(json: JsonObject): string | undefined {
    if (str(json, 'type') !== 'content_block_delta') return undefined;
    const delta = obj(json, 'delta');
    return str(delta, 'text') ?? str(delta, 'thinking') ?? str(delta, 'partial_json');
  }
}

export const messagesEndpoint: EndpointUsage = {
  fromJson: (body) => {
    const usage = obj(body, 'usage');
    return usage ? reported(anthropicUsage(usage)) : undefined;
  },
  stream: () => new MessagesStream(),
};

/** Anthropic's UsageParser: only /v1/messages reports usage (models lists do not). */
export const anthropicUsageParser = byEndpoint({ messages: messagesEndpoint });
