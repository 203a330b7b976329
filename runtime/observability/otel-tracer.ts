/**
 * The OpenTelemetry side of request tracing, loaded only when tracing is on (./tracing.ts). One span per request:
 * started when it arrives, a child of the client's W3C trace context (traceparent, tracestate) when it sent one,
 * injected into the upstream call so the provider's side of the trace continues from the gateway's span, and ended
 * with the GenAI attributes once the request completed (./genai-attributes.ts). Spans leave in batches over
 * OTLP/HTTP (JSON) on their own timer, never on the request path; shutdown flushes them.
 *
 * The gateway keeps its tracer provider to itself (no global registration): the standard OTEL_* variables configure
 * the endpoint and the resource (./tracing.ts), and, read by the SDK itself, the sampler (OTEL_TRACES_SAMPLER,
 * parent-based by default), the batch (OTEL_BSP_*) and the exporter's headers, time-out and compression
 * (OTEL_EXPORTER_OTLP_*).
 */
import {
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { GatewayContext } from '../../core/context';
import type { GatewayPlugin } from '../../core/plugin-contract';
import type { RequestCostService } from '../../contracts/services';
import { answerFacts, noteAnswerPart, type AnswerFacts } from './answer-facts';
import { completedAttributes, spanNameOf } from './genai-attributes';
import type { RequestTracing, TracingSettings } from './tracing';

const SPAN = 'tracing.span';
/** What a stream's events told of the answer: model, id, finish reasons (./answer-facts.ts). */
const STREAMED_ANSWER = 'tracing.streamed_answer';

/** Reads the client's trace context from the request headers (credentials are never readable through ctx.header). */
const requestHeaders: TextMapGetter<GatewayContext> = {
  get: (ctx, key) => ctx.header(key),
  keys: (ctx) => ctx.headerNames(),
};

/** Writes the gateway's trace context into the headers of the upstream call, replacing the client's. */
const upstreamHeaders: TextMapSetter<Record<string, string | string[]>> = {
  set: (headers, key, value) => {
    headers[key] = value;
  },
};

/** Epoch milliseconds of a moment measured on the request's monotonic clock. */
const epochMs = (ctx: GatewayContext, elapsedMs: number) => performance.timeOrigin + ctx.startedHr + elapsedMs;

export class OtelRequestTracing implements RequestTracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(
    settings: TracingSettings,
    private readonly cost: RequestCostService,
    logger: Logger,
  ) {
    // Export failures (collector down...) are reported by the SDK through diag: to the log, at warn.
    diag.setLogger(
      {
        error: (m, ...a) => logger.warn({ detail: a.map(String) }, `opentelemetry: ${m}`),
        warn: (m) => logger.warn(`opentelemetry: ${m}`),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes(settings.resource),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.url }))],
    });
    this.tracer = this.provider.getTracer('tollgate');
  }

  observer(): GatewayPlugin {
    return {
      name: 'tracing',
      onRequest: (ctx) => this.start(ctx),
      beforeUpstream: (ctx) => this.continueUpstream(ctx),
      onStreamEvent: (ctx, event) => {
        if (!(ctx.state.get(SPAN) as Span | undefined)?.isRecording()) return; // not sampled: nothing to note
        let facts = ctx.state.get(STREAMED_ANSWER) as AnswerFacts | undefined;
        if (!facts) ctx.state.set(STREAMED_ANSWER, (facts = { finishReasons: [] }));
        noteAnswerPart(event.data, facts);
      },
      onComplete: (ctx) => this.end(ctx),
      close: () => this.provider.shutdown(),
    };
  }

  private start(ctx: GatewayContext): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, ctx, requestHeaders);
    const span = this.tracer.startSpan(
      spanNameOf(ctx),
      {
        kind: SpanKind.CLIENT,
        startTime: epochMs(ctx, 0),
        attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path },
      },
      parent,
    );
    ctx.state.set(SPAN, span);
  }

  private continueUpstream(ctx: GatewayContext): void {
    const span = ctx.state.get(SPAN) as Span | undefined;
    if (!span) return;
    // The client's tracestate belongs to its traceparent: when that was invalid the span is a new root, and inject
    // writes the state of the span's own context (none), so the client's is not passed on beside a new trace id.
    delete ctx.upstreamHeaders.tracestate;
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), ctx.upstreamHeaders, upstreamHeaders);
  }

  private end(ctx: GatewayContext): void {
    const span = ctx.state.get(SPAN) as Span | undefined;
    // A span the sampler left out records nothing: its attributes are not worked out.
    if (!span?.isRecording()) return;
    span.updateName(spanNameOf(ctx));
    // A JSON answer is read here, off the request path; a stream's facts were picked from its events.
    const ok = ctx.status !== undefined && ctx.status < 400;
    const answered = !ok
      ? undefined
      : ctx.responseBody
        ? answerFacts(ctx.responseBody)
        : (ctx.state.get(STREAMED_ANSWER) as AnswerFacts | undefined);
    const attributes = completedAttributes(ctx, this.cost, answered);
    span.setAttributes(attributes);
    // A client span: any failed request is an error, a 4xx included (the HTTP conventions for clients).
    if (attributes['error.type'] !== undefined)
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(attributes['error.type']) });
    span.end(epochMs(ctx, ctx.latencyMs));
  }
}
