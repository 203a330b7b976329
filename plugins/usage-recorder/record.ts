import {
  MAX_MODEL_LENGTH,
  MEDIA_UNIT_FIELDS,
  PROVIDER_REPORTED,
  streamIncomplete,
  truncate,
  type CostProvenance,
  type EndpointKey,
  type GatewayContext,
  type PricedUsage,
  type Usage,
  type UsageRecord,
  type UsageSource,
} from '../../api';

const count = (n: number | undefined): number | null => (n === undefined ? null : n);

/** A record's token count of one side: text plus image and audio tokens (kept apart in Usage to be priced apart). */
const sum = (...parts: (number | undefined)[]): number | null =>
  parts.every((p) => p === undefined) ? null : parts.reduce<number>((a, p) => a + (p ?? 0), 0);

/**
 * Longest text a record keeps per field, in characters; a longer one is cut and ends with TRUNCATION_MARKER
 * (core/truncate.ts). The requested model is refused beyond MAX_MODEL_LENGTH before it gets here (intake/body.ts);
 * the served model, the search context size and a stream's error code come from the provider. Tags are bounded by
 * the attribution plugin's own maxima (max_keys, max_key_length, max_value_length at their highest), which hold for
 * tags another plugin sets too. Workspace and key ids come from the configuration (at most 64 characters), the
 * provider from its slug, the endpoint and provenance from fixed lists.
 */
export const RECORD_TEXT_LIMITS = {
  model: MAX_MODEL_LENGTH,
  servedModel: 256,
  searchContextSize: 64,
  serviceTier: 64,
  generationId: 128,
  errorCode: 80,
  tagCount: 256,
  tagKey: 256,
  tagValue: 4096,
} as const;

const bounded = (text: string | null | undefined, max: number): string | null =>
  text == null ? null : truncate(text, max);

/** A copy of the tags within RECORD_TEXT_LIMITS: the first tagCount keys, each key and value cut to its limit. */
function boundedTags(tags: Record<string, string>): Record<string, string> {
  // Copied key by key into a plain object: the request's tags are a null-prototype (dictionary) object, and
  // spreading one costs several times more. A tag beyond a limit, or a key that assignment would not copy
  // (__proto__), takes the cut copy.
  const copy: Record<string, string> = {};
  let n = 0;
  for (const k in tags) {
    const v = tags[k];
    if (++n > RECORD_TEXT_LIMITS.tagCount || k.length > RECORD_TEXT_LIMITS.tagKey || k === '__proto__')
      return cutTags(tags);
    if (typeof v === 'string' && v.length > RECORD_TEXT_LIMITS.tagValue) return cutTags(tags);
    copy[k] = v;
  }
  return copy;
}

function cutTags(tags: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.keys(tags)
      .slice(0, RECORD_TEXT_LIMITS.tagCount)
      .map((k) => {
        const v = tags[k];
        return [
          truncate(k, RECORD_TEXT_LIMITS.tagKey),
          typeof v === 'string' ? truncate(v, RECORD_TEXT_LIMITS.tagValue) : v,
        ];
      }),
  );
}

/**
 * How much to trust a record's cost, in order: a stream that did not complete (cut, or an error event after its
 * 200) is partial; a failed request costs nothing; audio and images with nothing measured to price them by are not
 * counted; tokenizer counts (or an audio duration estimated from the upload's size) are estimated; no price means
 * unpriced (cost unknown, never $0); otherwise the cost is measured from the provider's own usage.
 */
export function provenanceOf(ctx: GatewayContext, priced: PricedUsage | undefined): CostProvenance {
  const status = ctx.status ?? ctx.error?.status ?? 500;
  if (streamIncomplete(ctx) && status < 400) return 'partial';
  if (ctx.error || status >= 400) return 'failed';
  if (!ctx.endpoint?.costCounted && (!priced || priced.provenanceHint === 'not_counted')) return 'not_counted';
  if (!priced || priced.costPico === null) return 'unpriced';
  return ctx.usageEstimated || priced.estimated ? 'estimated' : 'measured';
}

/** How the token counts were obtained, whatever became of their price (UsageRecord.usageSource). */
export function usageSourceOf(ctx: GatewayContext): UsageSource {
  const u = ctx.usage;
  if (!u || TOKEN_FIELDS.every((f) => u[f] === undefined)) return 'none';
  return ctx.usageEstimated ? 'tokenizer' : 'provider';
}

const TOKEN_FIELDS = [
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  ...MEDIA_UNIT_FIELDS,
] as const;

/** What a record says beyond its counts and cost: who, where, when, how it went. */
export interface RecordFrame {
  id: string;
  ts: number;
  workspaceId: string | null;
  keyId: string | null;
  provider: string | null;
  model: string | undefined;
  endpoint: EndpointKey | null;
  status: number;
  streamed: boolean;
  latencyMs: number;
  ttfbMs: number | null;
  /** See UsageRecord.upstreamMs. */
  upstreamMs: number | null;
  tags: Record<string, string>;
  errorCode: string | null;
  usageSource: UsageSource;
}

/**
 * The stored record of one request: ids, routing, token counts, cost and its provenance, tags. Never a key or a body;
 * every text within RECORD_TEXT_LIMITS.
 */
export function buildRecord(ctx: GatewayContext, priced: PricedUsage | undefined, priceVersion: string): UsageRecord {
  const u = ctx.usage;
  const streamError = u?.streamError;
  const error = ctx.error
    ? ctx.error.code
    : (ctx.status ?? 0) >= 400
      ? `upstream_${ctx.status}`
      : streamError
        ? `upstream_${streamError}`
        : null;
  const frame: RecordFrame = {
    id: ctx.requestId,
    ts: ctx.startedAt,
    workspaceId: ctx.workspace?.id ?? null,
    keyId: ctx.keyId ?? null,
    provider: ctx.provider?.slug ?? null,
    model: ctx.model,
    endpoint: ctx.endpoint?.key ?? null,
    status: ctx.status ?? ctx.error?.status ?? 500,
    streamed: ctx.stream,
    latencyMs: Math.round(ctx.latencyMs),
    ttfbMs: ctx.ttfbMs === undefined ? null : Math.round(ctx.ttfbMs),
    upstreamMs: upstreamMsOf(ctx),
    tags: ctx.tags,
    errorCode: error,
    usageSource: usageSourceOf(ctx),
  };
  return assembleRecord(frame, u, priced, provenanceOf(ctx, priced), priceVersion);
}

/**
 * The provider's time from the two clock readings the proxy takes anyway (core/proxy.ts when it sends, core/relay.ts
 * when the answer's last byte is through): no clock is read for it. Null when nothing was sent or nothing came back.
 */
function upstreamMsOf(ctx: GatewayContext): number | null {
  const sent = ctx.upstreamSentMs;
  const done = ctx.upstreamDoneMs;
  return sent === undefined || done === undefined ? null : Math.round(Math.max(0, done - sent));
}

/** A record from its frame, the usage counted and its price (one object shape for every record). */
export function assembleRecord(
  frame: RecordFrame,
  u: Usage | undefined,
  priced: PricedUsage | undefined,
  provenance: CostProvenance,
  priceVersion: string,
): UsageRecord {
  const cost = provenance === 'failed' ? 0n : provenance === 'not_counted' ? null : (priced?.costPico ?? null);
  return {
    id: frame.id,
    ts: frame.ts,
    workspaceId: frame.workspaceId,
    keyId: frame.keyId,
    provider: frame.provider,
    model: bounded(frame.model, RECORD_TEXT_LIMITS.model),
    servedModel: bounded(u?.servedModel ?? frame.model, RECORD_TEXT_LIMITS.servedModel),
    endpoint: frame.endpoint,
    status: frame.status,
    streamed: frame.streamed,
    inputTokens: sum(u?.inputTokens, u?.inputImageTokens, u?.inputAudioTokens),
    outputTokens: sum(u?.outputTokens, u?.outputImageTokens, u?.outputAudioTokens),
    cacheReadTokens: count(u?.cacheReadTokens),
    cacheWriteTokens: count(u?.cacheWriteTokens),
    cacheWrite1hTokens: count(u?.cacheWrite1hTokens),
    reasoningTokens: count(u?.reasoningTokens),
    citationTokens: count(u?.citationTokens),
    searchQueries: count(u?.searchQueries),
    searchContextSize: bounded(u?.searchContextSize, RECORD_TEXT_LIMITS.searchContextSize),
    costPico: cost,
    // A failed request costs nothing at any price; a cost priced elsewhere without a list price keeps none.
    listCostPico: cost === null ? null : provenance === 'failed' ? 0n : (priced?.listCostPico ?? null),
    provenance,
    priceVersion:
      cost === null || provenance === 'failed'
        ? null
        : priced?.provenanceHint === 'provider_reported'
          ? PROVIDER_REPORTED
          : priceVersion,
    latencyMs: frame.latencyMs,
    ttfbMs: frame.ttfbMs,
    upstreamMs: frame.upstreamMs,
    tags: boundedTags(frame.tags),
    errorCode: bounded(frame.errorCode, RECORD_TEXT_LIMITS.errorCode),
    usageSource: frame.usageSource,
    providerCostPico: priced?.providerCostPico ?? null,
    costDisagrees: priced?.costDisagrees ?? null,
    toolCalls: u?.toolCalls && Object.keys(u.toolCalls).length > 0 ? { ...u.toolCalls } : null,
    priceId: priced?.priceId ?? null,
    serviceTier: bounded(u?.serviceTier, RECORD_TEXT_LIMITS.serviceTier),
    generationId: bounded(u?.generationId, RECORD_TEXT_LIMITS.generationId),
    inputAudioTokens: count(u?.inputAudioTokens),
    outputAudioTokens: count(u?.outputAudioTokens),
  };
}
