import type { GatewayContext } from '../core/context';
import { settleMediaUsage } from './wire/media-request';

/**
 * True when a response stream did not complete: it was cut (client gone, upstream reset or idle time-out),
 * or the provider sent an error event after its 200 status (Usage.streamError). Its record is 'partial'.
 */
export function streamIncomplete(gw: GatewayContext): boolean {
  return gw.streamCut || gw.usage?.streamError !== undefined;
}

/**
 * Completes a request's usage once the client is done, off the request path (the proxy's settleUsage): the tokens
 * a stream did not report are estimated, then an audio or image request's own units are added
 * (providers/wire/media-request.ts). A promise only when there is something to wait for.
 */
export function settleUsage(gw: GatewayContext, streamedText: () => string): Promise<void> | undefined {
  estimateMissingTokens(gw, streamedText);
  return settleMediaUsage(gw);
}

/**
 * Provider-reported counts always win; when a stream
 * reported none (chat completions without stream_options.include_usage) or did not complete, the missing counts
 * are estimated with the provider's tokenizer over the request and the text actually streamed (`streamedText`), and the usage
 * is marked estimated. The client's request is never changed to obtain usage.
 */
function estimateMissingTokens(gw: GatewayContext, streamedText: () => string): void {
  const endpoint = gw.endpoint;
  const tokenizer = gw.provider?.tokenizer;
  if (!endpoint?.costCounted || !tokenizer || gw.status === undefined || gw.status >= 400 || !gw.model) return;
  const reported = gw.usage;
  const complete = reported?.outputTokens !== undefined && !streamIncomplete(gw);
  if (complete || !gw.stream) return;

  const usage = { ...reported };
  if (usage.inputTokens === undefined && usage.cacheReadTokens === undefined) {
    usage.inputTokens = gw.json ? tokenizer.requestInputTokens(endpoint.key, gw.json, gw.model) : undefined;
  }
  // On a cut or failed stream the last reported output count is stale: count what the client actually received.
  // The generated text is only gathered now, when it is needed (see providers/wire/sse-usage.ts).
  const streamedTokens = tokenizer.textCounter(gw.model)(streamedText());
  usage.outputTokens = Math.max(usage.outputTokens ?? 0, streamedTokens);
  gw.usage = usage;
  gw.usageEstimated = true;
}
