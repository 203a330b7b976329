import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { GatewayContext } from './context';
import { asGatewayError, GatewayError } from './errors';
import { closeLingering } from './lingering-close';
import { newRequestId, REQUEST_ID_HEADER } from './request-id';

/**
 * The answers the gateway writes itself instead of relaying the provider's: an error (core/errors.ts), the
 * refusal of a request arriving during shutdown, and the headers every answer carries.
 */

/**
 * Gateway errors of status 500+ that are not logged as failures of the gateway itself: time-outs and unreachable
 * upstreams are the provider's state; plugin_error, limits_unavailable and budget_unavailable were logged where they arose.
 */
const EXPECTED_FAILURES: ReadonlySet<string> = new Set([
  'upstream_timeout',
  'upstream_unreachable',
  'plugin_error',
  'limits_unavailable',
  'gateway_busy',
  'budget_unavailable',
]);

/**
 * Refusals after which the connection is closed, draining what the client still sends of the refused body first, so
 * that it reads the answer rather than a reset (core/lingering-close.ts): a body not read to its end
 * (core/body-intake.ts), and a request without a valid gateway key. A connection that brought no valid key gets one
 * answer: a client pipelining thousands of keyless requests would otherwise have each refused in turn, back to back
 * on the proxy's thread, holding every other tenant's request behind them. SDKs open a new connection after a close.
 */
const LINGER_AFTER: ReadonlySet<string> = new Set([
  'body_too_large',
  'body_timeout',
  'gateway_key_missing',
  'gateway_key_invalid',
  'auth_blocked',
]);
/**
 * Those, and gateway_busy: the gateway is short of body memory then, and reading on would take more of it; a busy
 * refusal closes at once, and a client still sending may see a reset.
 */
const CLOSE_AFTER: ReadonlySet<string> = new Set([...LINGER_AFTER, 'gateway_busy']);

/** Adds the plugins' headers and the request id; a header the provider sent is never replaced. */
export function withGatewayHeaders(gw: GatewayContext, headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  for (const name in gw.responseHeaders) if (headers[name] === undefined) headers[name] = gw.responseHeaders[name];
  headers[REQUEST_ID_HEADER] = gw.requestId;
  return headers;
}

/** Answers with the gateway's own error, unless the answer already started (then the socket is cut). */
export function answerWithError(gw: GatewayContext, res: ServerResponse, err: unknown): void {
  const error = asGatewayError(err);
  gw.error = error;
  if (error.status >= 500 && !EXPECTED_FAILURES.has(error.code)) {
    gw.log.error({ err, requestId: gw.requestId }, 'request failed');
  }
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  gw.status = error.status;
  const body = Buffer.from(error.toBody());
  const headers: OutgoingHttpHeaders = {
    ...error.headers,
    'content-type': 'application/json',
    'content-length': body.length,
  };
  if (CLOSE_AFTER.has(error.code)) {
    headers.connection = 'close';
    if (LINGER_AFTER.has(error.code)) closeLingering(res.req);
  }
  res.writeHead(error.status, withGatewayHeaders(gw, headers));
  res.end(body);
}

/**
 * During shutdown a keep-alive connection may still bring a request: it is refused with 503 shutting_down and the
 * connection closed, so the client retries elsewhere. Nothing is forwarded (the upstream pools are closing).
 */
export function refuseWhileDraining(res: ServerResponse): void {
  const body = new GatewayError('shutting_down', 'The gateway is shutting down; retry the request.').toBody();
  res.writeHead(503, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
    'retry-after': '1',
    [REQUEST_ID_HEADER]: newRequestId(),
  });
  res.end(body);
}
