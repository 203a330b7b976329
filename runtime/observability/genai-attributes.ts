/**
 * A request's span, in the OpenTelemetry semantic conventions for generative AI (gen_ai.*) plus Tollgate's own
 * attributes (tollgate.*): kept apart from the OpenTelemetry glue (./otel-tracer.ts) so that it loads nothing.
 */
import type { GatewayContext } from '../../core/context';
import type { EndpointKey } from '../../core/usage';
import type { RequestCostService } from '../../contracts/services';
import type { AnswerFacts } from './answer-facts';
import { recordedCost } from './recorded-cost';

export type SpanAttributes = Record<string, string | number | boolean | string[]>;

/** gen_ai.operation.name per endpoint; endpoints the conventions do not name keep their own key. */
const OPERATIONS: Partial<Record<EndpointKey, string>> = {
  'chat.completions': 'chat',
  messages: 'chat',
  responses: 'chat',
  embeddings: 'embeddings',
};

/** gen_ai.system (gen_ai.provider.name in later versions of the conventions) for the providers they name. */
const SYSTEMS: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  perplexity: 'perplexity',
  mistral: 'mistral_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  xai: 'xai',
  cohere: 'cohere',
  gemini: 'gcp.gemini',
};

/** gen_ai.system / gen_ai.provider.name of a provider slug: the conventions' name, or the slug. */
export function systemOf(provider: string): string {
  return SYSTEMS[provider] ?? provider;
}

/** The output-token cap a request asks for, by whichever field its API names it. */
export function maxTokensOf(json: Record<string, unknown> | undefined): number | undefined {
  const cap = json?.max_tokens ?? json?.max_completion_tokens ?? json?.max_output_tokens;
  return typeof cap === 'number' ? cap : undefined;
}

export function operationOf(ctx: GatewayContext): string {
  const key = ctx.endpoint?.key;
  return key === undefined ? 'unknown' : (OPERATIONS[key] ?? key);
}

/** "{operation} {model}", as the conventions name an inference span. */
export function spanNameOf(ctx: GatewayContext): string {
  const operation = operationOf(ctx);
  return ctx.model ? `${operation} ${ctx.model}` : operation;
}

/**
 * The attributes known once the request completed. gen_ai.response.model, .id and .finish_reasons are what the
 * answer names (./answer-facts.ts; the model also from the provider's usage parser), absent when it names none.
 * Input tokens are all of them, cached ones included (as the conventions count them), with the cached ones also
 * apart; the cost is the recorded one (recorded-cost.ts), absent when unknown. Tags are attributes too: a span is
 * not a time series, so their values need no cap.
 */
export function completedAttributes(
  ctx: GatewayContext,
  cost: RequestCostService,
  answer: AnswerFacts | undefined,
): SpanAttributes {
  const a: SpanAttributes = {
    'gen_ai.operation.name': operationOf(ctx),
    'tollgate.request_id': ctx.requestId,
    'tollgate.stream': ctx.stream,
  };
  const provider = ctx.provider?.slug;
  if (provider !== undefined) {
    a['gen_ai.system'] = systemOf(provider);
    a['gen_ai.provider.name'] = a['gen_ai.system'];
    a['tollgate.provider'] = provider;
    try {
      a['server.address'] = new URL(ctx.provider!.baseUrl).hostname;
    } catch {
      // a base URL is validated at start; nothing to add if it is odd
    }
  }
  if (ctx.model !== undefined) a['gen_ai.request.model'] = ctx.model;
  const maxTokens = maxTokensOf(ctx.json);
  if (maxTokens !== undefined) a['gen_ai.request.max_tokens'] = maxTokens;
  const status = ctx.status ?? ctx.error?.status;
  if (status !== undefined) a['http.response.status_code'] = status;
  const served = ctx.usage?.servedModel ?? answer?.model;
  if (served !== undefined) a['gen_ai.response.model'] = served;
  if (answer?.id !== undefined) a['gen_ai.response.id'] = answer.id;
  if (answer?.finishReasons.length) a['gen_ai.response.finish_reasons'] = answer.finishReasons;
  const u = ctx.usage;
  if (u) {
    const cached = (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
    if (u.inputTokens !== undefined || cached > 0) a['gen_ai.usage.input_tokens'] = (u.inputTokens ?? 0) + cached;
    if (u.outputTokens !== undefined) a['gen_ai.usage.output_tokens'] = u.outputTokens;
    if (u.cacheReadTokens !== undefined) a['gen_ai.usage.cache_read.input_tokens'] = u.cacheReadTokens;
    if (u.cacheWriteTokens !== undefined || u.cacheWrite1hTokens !== undefined)
      a['gen_ai.usage.cache_creation.input_tokens'] = (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
    if (ctx.usageEstimated) a['tollgate.usage.estimated'] = true;
    const priced = recordedCost(ctx, cost)!;
    if (priced.usd !== null) a['tollgate.cost_usd'] = priced.usd;
    a['tollgate.cost.provenance'] = priced.provenance;
  }
  if (ctx.workspace) a['tollgate.workspace'] = ctx.workspace.id;
  if (ctx.keyId !== undefined) a['tollgate.key_id'] = ctx.keyId;
  for (const key in ctx.tags) a[`tollgate.tag.${key}`] = ctx.tags[key];
  if (ctx.error) a['error.type'] = ctx.error.code;
  else if (status !== undefined && status >= 400) a['error.type'] = String(status);
  return a;
}
