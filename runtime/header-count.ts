import type { RequestListener } from 'node:http';
import { GatewayError } from '../core/errors';

/**
 * Headers one request may carry. Node keeps at most `server.maxHeadersCount` of them and drops the rest without a
 * word, so a header past that count would vanish unseen (a tag, a key header); the proxy sets the count one above
 * this and refuses a request that reaches it, the way Node refuses headers over 16 KiB in all (431).
 */
export const MAX_REQUEST_HEADERS = 1000;

/** The handler, behind a refusal of requests with more than MAX_REQUEST_HEADERS headers (431 headers_too_many). */
export function refuseHeaderFlood(handler: RequestListener): RequestListener {
  return (req, res) => {
    if (req.rawHeaders.length / 2 <= MAX_REQUEST_HEADERS) return handler(req, res);
    const error = new GatewayError(
      'headers_too_many',
      `A request may carry at most ${MAX_REQUEST_HEADERS} headers; this one has more.`,
    );
    const body = error.toBody();
    res.writeHead(error.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  };
}
