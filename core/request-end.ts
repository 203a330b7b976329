import type { Logger } from 'pino';
import type { GatewayContext } from './context';
import { GatewayError } from './errors';
import type { InFlight } from './in-flight';
import type { PluginPipeline } from './plugin-pipeline';

/** What ending a request needs: the plugins, the per-request log, and the settling of request-measured usage. */
export interface RequestEndDeps {
  pipeline: PluginPipeline;
  /** For the per-request line: its fields are ids, names and numbers only, so pino's redaction is skipped. */
  requestLog: Logger;
  /** See ProxyDeps.settleUsage (core/proxy.ts). */
  settleUsage?: (gw: GatewayContext, streamedText: () => string) => Promise<void> | undefined;
}

/** After the client is done: settle usage, run onComplete (in reverse) and log, all off the request path. */
export async function endRequest({ gw, delivered, tap, lines }: InFlight, deps: RequestEndDeps): Promise<void> {
  gw.latencyMs = gw.elapsedMs();
  if (!delivered && !gw.error) {
    gw.streamCut = gw.status !== undefined;
    gw.error = new GatewayError('request_aborted', 'The client disconnected before the answer was complete');
  }
  try {
    try {
      if (tap) {
        await tap.end();
        gw.usage = tap.result();
      }
      if (lines) {
        await lines.end();
        gw.batchResults = lines.results();
      }
      const settling = deps.settleUsage?.(gw, () => tap?.text() ?? '');
      if (settling) await settling; // no turn of the microtask queue when nothing is pending
    } catch (err) {
      // Usage stays as reported (or unknown), but the request is still recorded.
      gw.log.warn({ err, requestId: gw.requestId }, 'settling usage failed');
    }
    const completing = deps.pipeline.completeNow(gw);
    if (completing) await completing;
    logLine(deps.requestLog, gw);
  } catch (err) {
    gw.log.error({ err, requestId: gw.requestId }, 'completing the request failed');
  }
}

/** One structured line per request. Never headers, never bodies: nothing secret can reach the log. */
function logLine(log: Logger, gw: GatewayContext): void {
  log.info(
    {
      requestId: gw.requestId,
      method: gw.method,
      path: gw.path,
      status: gw.status,
      provider: gw.provider?.slug,
      model: gw.model,
      stream: gw.stream,
      workspace: gw.workspace?.id,
      keyId: gw.keyId,
      latencyMs: Math.round(gw.latencyMs * 100) / 100,
      ttfbMs: gw.ttfbMs === undefined ? undefined : Math.round(gw.ttfbMs * 100) / 100,
      error: gw.error?.code,
      cut: gw.streamCut || undefined,
    },
    'request',
  );
}
