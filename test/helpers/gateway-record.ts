/** A usage record as the gateway stores it, with the tokens and cost a reconciliation test needs. */
import type { UsageRecord } from '../../records/usage-record';
import { parseUsd } from '../../pricing/money';

let seq = 0;
export function gatewayRecord(
  provider: string,
  model: string,
  ts: number,
  t: { input: number; cacheRead?: number; cacheWrite?: number; output: number },
  costUsd: string | null,
): UsageRecord {
  return {
    id: `rec-${++seq}`,
    ts: ts + 3_600_000,
    workspaceId: 'default',
    keyId: null,
    provider,
    model,
    servedModel: model,
    endpoint: provider === 'anthropic' ? 'messages' : 'chat.completions',
    status: 200,
    streamed: false,
    inputTokens: t.input,
    outputTokens: t.output,
    cacheReadTokens: t.cacheRead ?? 0,
    cacheWriteTokens: t.cacheWrite ?? 0,
    cacheWrite1hTokens: null,
    reasoningTokens: null,
    citationTokens: null,
    searchQueries: null,
    costPico: costUsd === null ? null : parseUsd(costUsd),
    provenance: costUsd === null ? 'unpriced' : 'measured',
    priceVersion: costUsd === null ? null : 'test',
    latencyMs: 100,
    ttfbMs: null,
    tags: {},
    errorCode: null,
    usageSource: 'provider',
    providerCostPico: null,
    costDisagrees: null,
    toolCalls: null,
    priceId: costUsd === null ? null : `${provider}/${model}`,
  };
}
