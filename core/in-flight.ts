import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HeldBody } from './body-reader';
import type { GatewayContext } from './context';
import type { EndpointSpec } from './endpoints';
import type { LineTap } from './line-tap';
import type { StreamTap } from './stream-tap';
import type { UpstreamExchange } from './upstream-exchange';

/**
 * One request on its way through the proxy: what its steps (core/proxy.ts, core/relay.ts, core/request-end.ts)
 * share, in one object instead of a list of parameters; also what its body holds (HeldBody), until the request is over.
 */
export interface InFlight extends HeldBody {
  readonly gw: GatewayContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly endpoint: EndpointSpec;
  /** Created before anything is read, so a client that leaves at any point cancels the upstream call too. */
  readonly upstream: UpstreamExchange;
  /** The provider named by X-Gateway-Provider, when the client sent one. */
  explicit: string | undefined;
  /** Watches a streamed answer for usage and the plugins' onStreamEvent. */
  tap: StreamTap | undefined;
  /** Reads a batch's results line by line as they pass. */
  lines: LineTap | undefined;
  /** The client got the whole answer: the response finished on a live connection. */
  delivered: boolean;
}
