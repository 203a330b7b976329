import { connect, type Socket } from 'node:net';
import { OPENAI_KEY } from './gateway';

/** One pipelined chat request: raw HTTP/1.1 bytes, keep-alive, with the gateway key given (or none), saying `content`. */
export function chatRequestBytes(key: string | undefined, path = '/v1/chat/completions', content = 'hi'): Buffer {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
  const auth = key ? `X-Gateway-Key: ${key}\r\n` : '';
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n${auth}Authorization: Bearer ${OPENAI_KEY}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
}

/**
 * A connection that writes `requests` copies of `request` in one go (pipelined), as fast as the gateway reads them,
 * and never reads an answer unless `read` is set. Returns the socket; destroy() leaves.
 */
export function pipeline(url: string, request: Buffer, requests: number, read = false): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  if (!read) socket.pause(); // nothing is read: the kernel's buffers fill, then the gateway's writes wait
  socket.write(Buffer.concat(Array.from({ length: requests }, () => request)));
  return socket;
}
