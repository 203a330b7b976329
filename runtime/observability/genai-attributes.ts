/**
 * A request's span, in the OpenTelemetry semantic conventions for generative AI (gen_ai.*) plus Tollgate's own
 * attributes (tollgate.*): kept apart from the OpenTelemetry glue (./otel-tracer.ts) so that it loads nothing.
 */
import type { GatewayContext } from '../../core/context';
import type { EndpointKey } from '../../core/usage';
import type { RequestCostService } from '../../contracts/services';
import { recordedCost } from './recorded-cost';

export type SpanAttributes = Record<string, string | number | boolean>;

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

/** The first "model" member in a piece of JSON text (escaped quotes inside strings never match). */
const MODEL_MEMBER = /"model"\s*:\s*"([^"\\]{1,256})"/;

export function modelNamedIn(json: string): string | undefined {
  return MODEL_MEMBER.exec(json)?.[1];
}

/**
 * The model a non-streamed JSON answer names, read from its first 4 KiB and its last 1 KiB only (answers name it
 * near the top, embeddings near the end, after the vectors); undefined for a compressed body.
 */
export function modelOfAnswer(body: Buffer): string | undefined {
  const head = modelNamedIn(body.subarray(0, 4096).toString('utf8'));
  return (
    head ??
    (body.length > 4096 ? modelNamedIn(body.subarray(Math.max(4096, body.length - 1024)).toString('utf8')) : undefined)
  );
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
 * The attributes known once the request completed. gen_ai.response.model is the model the answer names (read by
 * the tracer, or by the provider's usage parser), absent when it names none. Input tokens are all of them, cached ones included (as the
 * conventions count them); the cost is the recorded one (recorded-cost.ts), absent when unknown. Tags are attributes
 * too: a span is not a time series, so their values need no cap.
 */
export function completedAttributes(
  ctx: GatewayContext,
  cost: RequestCostService,
  answeredModel: string | undefined,
): SpanAttributes {
  const a: SpanAttributes = {
    'gen_ai.operation.name': operationOf(ctx),
    'tollgate.request_id': ctx.requestId,
    'tollgate.stream': ctx.stream,
  };
  const provider = ctx.provider?.slug;
  if (provider !== undefined) {
    a['gen_ai.system'] = SYSTEMS[provider] ?? provider;
    a['gen_ai.provider.name'] = a['gen_ai.system'];
    a['tollgate.provider'] = provider;
    try {
      a['server.address'] = new URL(ctx.provider!.baseUrl).hostname;
    } catch {
      // a base URL is validated at start; nothing to add if it is odd
    }
  }
  if (ctx.model !== undefined) a['gen_ai.request.model'] = ctx.model;
  const status = ctx.status ?? ctx.error?.status;
  if (status !== undefined) a['http.response.status_code'] = status;
  const served = ctx.usage?.servedModel ?? answeredModel;
  if (served !== undefined) a['gen_ai.response.model'] = served;
  const u = ctx.usage;
  if (u) {
    const cached = (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
    if (u.inputTokens !== undefined || cached > 0) a['gen_ai.usage.input_tokens'] = (u.inputTokens ?? 0) + cached;
    if (u.outputTokens !== undefined) a['gen_ai.usage.output_tokens'] = u.outputTokens;
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
