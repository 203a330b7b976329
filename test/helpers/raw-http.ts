import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes exactly as given (no client-side path normalisation or header checks, unlike fetch/undici),
 * with Connection: close, and parses the answer. For path-smuggling and hop-by-hop header tests, and header
 * bytes in a chosen encoding (utf8, or latin1 to send bytes that are not UTF-8).
 */
export function rawRequest(
  baseUrl: string,
  head: string,
  body = '',
  encoding: BufferEncoding = 'utf8',
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(lines[0]?.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    const withLength = body ? `${head}\r\nContent-Length: ${Buffer.byteLength(body)}` : head;
    // write, not end: Node's server aborts a request whose client half-closes the socket
    socket.write(`${withLength}\r\nConnection: close\r\n\r\n${body}`, encoding);
  });
}
