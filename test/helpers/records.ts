import type { UsageRecord } from '../../records/usage-record';

/**
 * One usage record as the store keeps it: a successful, unpriced chat completion of gpt-4o-mini in workspace
 * "default" at epoch 0, every token count unknown (null), with `over` on top. Tests name what they rely on.
 */
export function usageRecord(over: Partial<UsageRecord> = {}): UsageRecord {
  return {
    id: 'r',
    ts: 0,
    workspaceId: 'default',
    keyId: null,
    provider: 'openai',
    model: 'gpt-4o-mini',
    servedModel: null,
    endpoint: 'chat.completions',
    status: 200,
    streamed: false,
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    cacheWrite1hTokens: null,
    reasoningTokens: null,
    citationTokens: null,
    searchQueries: null,
    costPico: null,
    provenance: 'unpriced',
    priceVersion: null,
    latencyMs: 1,
    ttfbMs: null,
    tags: {},
    errorCode: null,
    ...over,
  };
}

/** Every token bucket of a record at zero (a request the provider reported nothing extra for). */
export const ZERO_BUCKETS = {
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  reasoningTokens: 0,
  citationTokens: 0,
  searchQueries: 0,
} as const satisfies Partial<UsageRecord>;
