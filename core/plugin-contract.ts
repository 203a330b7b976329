import type { GatewayContext } from './context';
import type { SseEvent } from './usage';

export type Awaitable<T> = T | Promise<T>;

/**
 * A gateway plugin: an object with any of the phase hooks below. Phases run in this order. Within onRequest and
 * beforeUpstream, plugins run in the order of the YAML `plugins:` list; the response side mirrors it, in reverse.
 *
 *  onRequest       path, method and headers known; body not read yet. Authenticate, tag, admit or refuse.
 *  beforeUpstream  body parsed, provider and model resolved. Check limits, edit ctx.upstreamHeaders.
 *  onResponse      upstream status and headers known (and the whole body for non-streamed JSON). Add headers
 *                  with ctx.responseHeaders. Nothing has been sent to the client yet.
 *  onStreamEvent   each SSE event of a streamed response, after its bytes were already written to the client:
 *                  synchronous, cheap, cannot delay or change the stream.
 *  onComplete      the exchange is over (answered, failed or aborted); usage known. Runs off the request path,
 *                  for the plugins whose onRequest or beforeUpstream ran (or that have neither).
 *
 * Error policy: throwing a GatewayError in onRequest, beforeUpstream or onResponse answers the request with that
 * error; any other exception becomes a 500 plugin_error (the process stays up). Exceptions in onStreamEvent and
 * onComplete are logged and never reach the client.
 */
export interface GatewayPlugin {
  readonly name: string;
  onRequest?(ctx: GatewayContext): Awaitable<void>;
  beforeUpstream?(ctx: GatewayContext): Awaitable<void>;
  onResponse?(ctx: GatewayContext): Awaitable<void>;
  onStreamEvent?(ctx: GatewayContext, event: SseEvent): void;
  onComplete?(ctx: GatewayContext): Awaitable<void>;
  /** Called once on shutdown after the last request finished: flush queues, close connections. */
  close?(): Awaitable<void>;
}
