import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { GatewayContext } from './context';
import { asGatewayError, ERROR_CODES, GatewayError, type ErrorSpec } from './errors';
import { closeLingering } from './lingering-close';
import { newRequestId, REQUEST_ID_HEADER } from './request-id';

/**
 * The answers the gateway writes itself instead of relaying the provider's: an error (core/errors.ts), the
 * refusal of a request arriving during shutdown, and the headers every answer carries.
 */

/** Adds the plugins' headers and the request id; a header the provider sent is never replaced. */
export function withGatewayHeaders(gw: GatewayContext, headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  for (const name in gw.responseHeaders) if (headers[name] === undefined) headers[name] = gw.responseHeaders[name];
  headers[REQUEST_ID_HEADER] = gw.requestId;
  return headers;
}

/** Answers with the gateway's own error, unless the answer already started (then the socket is cut). */
export function answerWithError(gw: GatewayContext, res: ServerResponse, err: unknown): void {
  const error = asGatewayError(err);
  const spec: ErrorSpec = ERROR_CODES[error.code];
  gw.error = error;
  // An expected failure (ERROR_CODES) is the provider's state, or was logged where it arose.
  if (error.status >= 500 && !spec.expected) {
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
  if (spec.close) {
    headers.connection = 'close'; // after a refused body or a missing key (ERROR_CODES)
    if (spec.close === 'linger') closeLingering(res.req);
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
