/**
 * The OpenTelemetry semantic-convention metrics for generative AI clients, under the names an OpenTelemetry
 * Prometheus exporter gives them (dots become _, the unit seconds a suffix), so that GenAI dashboards made for those
 * conventions bind to the gateway as they are: gen_ai.client.token.usage and gen_ai.client.operation.duration, with
 * the buckets the conventions advise. Kept beside Tollgate's own metrics, with the same bounded model label.
 */
import type { Registry } from 'prom-client';
import type { GatewayContext } from '../../core/context';
import { FixedHistogram } from './fixed-histogram';
import { operationOf, systemOf } from './genai-attributes';

const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** gen_ai.provider.name is the current name, gen_ai.system the one older dashboards group by: both are given. */
const LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_system', 'gen_ai_request_model'];

export class GenAiMetrics {
  private readonly tokens: FixedHistogram;
  private readonly duration: FixedHistogram;

  constructor(registry: Registry) {
    this.tokens = new FixedHistogram(
      'gen_ai_client_token_usage',
      'Tokens per request (OpenTelemetry gen_ai.client.token.usage), by gen_ai_token_type: input (cached included) or output.',
      [...LABELS, 'gen_ai_token_type'],
      TOKEN_BUCKETS,
      registry,
    );
    this.duration = new FixedHistogram(
      'gen_ai_client_operation_duration_seconds',
      'Whole duration of a request sent to a provider (OpenTelemetry gen_ai.client.operation.duration); error_type is set when it failed.',
      [...LABELS, 'error_type'],
      DURATION_BUCKETS,
      registry,
    );
  }

  /** onComplete of a request that went to a provider; `model` is the bounded model label. */
  observe(ctx: GatewayContext, provider: string, model: string): void {
    if (!ctx.sentUpstream) return;
    const operation = operationOf(ctx);
    const system = systemOf(provider);
    const status = ctx.status ?? ctx.error?.status;
    const error = ctx.error?.code ?? (status !== undefined && status >= 400 ? String(status) : '');
    this.duration.observe([operation, system, system, model, error], ctx.latencyMs / 1000);
    const u = ctx.usage;
    if (!u) return;
    const input =
      (u.inputTokens ?? 0) + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
    if (u.inputTokens !== undefined || input > 0)
      this.tokens.observe([operation, system, system, model, 'input'], input);
    if (u.outputTokens !== undefined) this.tokens.observe([operation, system, system, model, 'output'], u.outputTokens);
  }
}
