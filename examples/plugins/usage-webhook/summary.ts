import { formatUsd, type GatewayContext, type PricedUsage } from 'tollgate';

/**
 * What the webhook sends per request: ids, routing, token counts, cost and tags. Built only from context
 * fields that never hold a credential (plugins cannot see keys), and never a prompt or a completion.
 */
export interface UsageSummary {
  request_id: string;
  /** Request start, ISO 8601. */
  ts: string;
  workspace: string | null;
  key_id: string | null;
  provider: string | null;
  model: string | null;
  served_model: string | null;
  endpoint: string | null;
  status: number;
  streamed: boolean;
  /** null = the provider did not report it. */
  tokens: {
    input: number | null;
    output: number | null;
    cache_read: number | null;
    cache_write: number | null;
    reasoning: number | null;
  };
  /** True when the counts were estimated with a tokenizer (a stream that reported no usage). */
  estimated: boolean;
  /** Exact USD decimal string; null when unknown (no usage, no price, or not counted). Never a made-up $0. */
  cost_usd: string | null;
  cost_source: PricedUsage['provenanceHint'] | 'no_usage';
  latency_ms: number;
  tags: Record<string, string>;
  /** The gateway error code, upstream_<status> for an upstream error, or null. */
  error: string | null;
}

export function summarize(ctx: GatewayContext, cost: PricedUsage | undefined): UsageSummary {
  const u = ctx.usage;
  const status = ctx.status ?? ctx.error?.status ?? 500;
  return {
    request_id: ctx.requestId,
    ts: new Date(ctx.startedAt).toISOString(),
    workspace: ctx.workspace?.id ?? null,
    key_id: ctx.keyId ?? null,
    provider: ctx.provider?.slug ?? null,
    model: ctx.model ?? null,
    served_model: u?.servedModel ?? ctx.model ?? null,
    endpoint: ctx.endpoint?.key ?? null,
    status,
    streamed: ctx.stream,
    tokens: {
      input: u?.inputTokens ?? null,
      output: u?.outputTokens ?? null,
      cache_read: u?.cacheReadTokens ?? null,
      cache_write: u?.cacheWriteTokens ?? null,
      reasoning: u?.reasoningTokens ?? null,
    },
    estimated: ctx.usageEstimated,
    cost_usd: cost?.costPico == null ? null : formatUsd(cost.costPico),
    cost_source: cost?.provenanceHint ?? 'no_usage',
    latency_ms: Math.round(ctx.latencyMs),
    tags: { ...ctx.tags },
    error: ctx.error?.code ?? (status >= 400 ? `upstream_${status}` : null),
  };
}
