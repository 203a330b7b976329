import type { UsageRecord } from '../../core/usage';

/** A measured, priced gpt-4o-mini chat completion record as the usage recorder writes one, with `over` on top. */
export function usageRecord(over: Partial<UsageRecord> & Pick<UsageRecord, 'id' | 'ts'>): UsageRecord {
  return {
    workspaceId: 'default',
    keyId: 'test',
    provider: 'openai',
    model: 'gpt-4o-mini',
    servedModel: over.model ?? 'gpt-4o-mini',
    endpoint: 'chat.completions',
    status: 200,
    streamed: false,
    inputTokens: 10,
    outputTokens: 5,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    reasoningTokens: 0,
    citationTokens: 0,
    searchQueries: 0,
    costPico: 0n,
    provenance: 'measured',
    priceVersion: 'test',
    latencyMs: 10,
    ttfbMs: 5,
    tags: {},
    errorCode: null,
    ...over,
  };
}
