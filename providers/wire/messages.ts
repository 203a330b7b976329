import type { IterationUsage, SseEvent, Usage, UsageParser } from '../../core/usage';
import { anthropicBatches } from './batches';
import { arr, compact, isObject, num, obj, reported, serviceTierAt, str, type JsonObject } from './read';
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
  codeExecutions?: number;
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
    codeExecutions: num(u, 'server_tool_use', 'code_execution_requests'),
  };
}

/** The token counts of a Counts, as the Usage buckets they bill. */
function tokenBuckets(c: Counts): IterationUsage {
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
  }) as IterationUsage;
}

/**
 * Anthropic's input_tokens already EXCLUDES cache reads and writes, so it is taken as is. Cache writes are
 * split by TTL when the cache_creation breakdown is present: 1-hour writes are billed at their own rate.
 * With `usage.iterations` (context compaction, server-tool loops) the top-level counts cover only the
 * non-compaction iterations; Anthropic bills every iteration, so the billed counts are the sum over them
 * (platform.claude.com/docs/en/build-with-claude/compaction, "Understanding usage"), each iteration kept
 * for pricing too (a long-context rate applies per iteration).
 */
function toUsage(top: Counts, iterations: readonly Counts[] | undefined, serviceTier?: string): Usage {
  const billed = iterations ? sumCounts(iterations) : top;
  return compact({
    ...tokenBuckets(billed),
    // Server-side web search is billed per request; only the top level reports it.
    searchQueries: top.webSearches,
    // Counted, not priced per request: billed by container-hour beyond a monthly free allowance (docs/pricing.md).
    toolCalls: top.codeExecutions ? { code_execution: top.codeExecutions } : undefined,
    iterations: iterations && iterations.length > 1 ? iterations.map(tokenBuckets) : undefined,
    serviceTier,
  });
}

/** Each count summed over the iterations; a count no iteration reports stays unreported. */
function sumCounts(list: readonly Counts[]): Counts {
  const out: Counts = {};
  for (const c of list) {
    for (const key of Object.keys(c) as (keyof Counts)[]) {
      const v = c[key];
      if (v !== undefined) out[key] = (out[key] ?? 0) + v;
    }
  }
  return out;
}

/** The per-iteration counts of `usage.iterations`, or undefined when absent or empty. */
function readIterations(u: JsonObject): Counts[] | undefined {
  const list = arr(u, 'iterations');
  if (!list || list.length === 0) return undefined;
  const out: Counts[] = [];
  for (const item of list) if (isObject(item)) out.push(readCounts(item));
  return out.length > 0 ? out : undefined;
}

/** usage.service_tier (standard, priority, batch) names the tier that served the answer. */
export function anthropicUsage(u: JsonObject): Usage {
  return toUsage(readCounts(u), readIterations(u), serviceTierAt(u, 'service_tier'));
}

/** Events worth parsing; ping, content_block_start/stop and message_stop carry neither usage nor text. */
const WANTED = new Set(['message_start', 'message_delta', 'content_block_delta']);

/**
 * A messages SSE stream. message_start carries input and cache counts; message_delta carries the CUMULATIVE
 * output_tokens and may restate (or, with server tools, update) input and cache counts. Each field keeps the
 * latest value reported, except that a 0 does not replace an earlier non-zero count: a compaction stream's
 * final delta restates the message iteration's cache read as 0 after message_start reported the real one.
 * The delta's `iterations` (compaction) replace the top-level counts as described at toUsage.
 */
export class MessagesStream extends JsonStreamAccumulator {
  private readonly counts: Counts = {};
  private iterations: Counts[] | undefined;
  private serviceTier: string | undefined;

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
      const v = next[key];
      // A 0 restating a count reported earlier does not erase it (see the class comment).
      if (v !== undefined && !(v === 0 && (this.counts[key] ?? 0) > 0)) this.counts[key] = v;
    }
    this.iterations = readIterations(usage) ?? this.iterations;
    this.serviceTier = serviceTierAt(usage, 'service_tier') ?? this.serviceTier;
    this.usage = reported(toUsage(this.counts, this.iterations, this.serviceTier));
  }

  /** Generated text: text, thinking, tool input, and a compaction summary (one compaction_delta with `content`). */
  protected textOf(json: JsonObject): string | undefined {
    if (str(json, 'type') !== 'content_block_delta') return undefined;
    const delta = obj(json, 'delta');
    return str(delta, 'text') ?? str(delta, 'thinking') ?? str(delta, 'partial_json') ?? str(delta, 'content');
  }
}

export const messagesEndpoint: EndpointUsage = {
  fromJson: (body) => {
    const usage = obj(body, 'usage');
    return usage ? reported(anthropicUsage(usage)) : undefined;
  },
  stream: () => new MessagesStream(),
};

const messagesOnly = byEndpoint({ messages: messagesEndpoint });

/** Anthropic's UsageParser: only /v1/messages reports usage (models lists do not), and message batches' results. */
export const anthropicUsageParser: UsageParser = { ...messagesOnly, batches: anthropicBatches(messagesOnly) };
