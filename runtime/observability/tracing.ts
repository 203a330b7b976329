/**
 * Whether requests are traced, from the standard OpenTelemetry environment variables; and, only when they are, the
 * OpenTelemetry SDK, loaded here on demand (./otel-tracer.ts). Off, nothing of it is loaded and no hook is added
 * to the pipeline: the request path pays nothing.
 *
 * On when OTEL_TRACES_EXPORTER names otlp, or when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT) and OTEL_TRACES_EXPORTER does not say otherwise; off when OTEL_SDK_DISABLED=true
 * or OTEL_TRACES_EXPORTER=none. Unlike an SDK's default, nothing is sent to localhost:4318 unless asked for.
 */
import type { Logger } from 'pino';
import type { GatewayPlugin } from '../../core/plugin-contract';
import type { RequestCostService } from '../../contracts/services';

export interface TracingSettings {
  /** Where spans are sent: OTLP over HTTP, JSON encoded. */
  url: string;
  /** The resource of every span: OTEL_RESOURCE_ATTRIBUTES, and service.name from OTEL_SERVICE_NAME (default tollgate). */
  resource: Record<string, string>;
  /** Why a setting was not followed, for the start log. */
  warnings: string[];
}

const DEFAULT_ENDPOINT = 'http://localhost:4318';

export function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const wanted = exporters.length > 0 ? exporters.includes('otlp') : Boolean(specific || base);
  if (!wanted) return undefined;
  const warnings: string[] = [];
  const others = exporters.filter((e) => e !== 'otlp' && e !== 'none');
  if (others.length) warnings.push(`OTEL_TRACES_EXPORTER: only otlp is supported; ignored ${others.join(', ')}`);
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol && protocol !== 'http/json')
    warnings.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: Tollgate exports OTLP over HTTP as JSON (http/json)`);
  // The signal-specific endpoint is used as given; the general one gets the traces path (OTLP exporter spec).
  const url = specific || `${(base || DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const resource = resourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES ?? '', warnings);
  resource['service.name'] = env.OTEL_SERVICE_NAME?.trim() || resource['service.name'] || 'tollgate';
  return { url, resource, warnings };
}

/** OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values percent-encoded. */
function resourceAttributes(text: string, warnings: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (!pair.trim()) continue;
    const at = pair.indexOf('=');
    try {
      if (at <= 0) throw new Error('no key');
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      warnings.push(`OTEL_RESOURCE_ATTRIBUTES: ignored "${pair.trim().slice(0, 100)}" (expected key=value)`);
    }
  }
  return out;
}

/** The tracing observer: first in the pipeline, it starts a span per request and continues its W3C trace context upstream. */
export interface RequestTracing {
  observer(): GatewayPlugin;
}

export function openTracing(
  env: NodeJS.ProcessEnv,
  cost: RequestCostService,
  logger: Logger,
): RequestTracing | undefined {
  const settings = tracingSettings(env);
  if (!settings) return undefined;
  for (const warning of settings.warnings) logger.warn(warning);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the SDK is loaded only when tracing is on
  const { OtelRequestTracing } = require('./otel-tracer') as typeof import('./otel-tracer');
  logger.info({ traces: settings.url.replace(/\/\/[^/@]*@/, '//') }, 'OpenTelemetry tracing on');
  return new OtelRequestTracing(settings, cost, logger);
}
