import { connect, type Socket } from 'node:net';
import { OPENAI_KEY } from './gateway';
import { parseResponses, type ParsedResponse } from './reliability';

export interface SlowUploadOptions {
  /** The gateway key sent (X-Gateway-Key). */
  key: string;
  /** The declared Content-Length: the body is a valid chat request of exactly this many bytes. */
  size: number;
  /** Bytes sent at once, after the headers. */
  first?: number;
  /** Then `piece` bytes every `everyMs` ms until the body is complete (or the connection closes). */
  piece?: number;
  everyMs?: number;
}

/**
 * A chat request on a raw connection whose body arrives slowly: the attack of a client that holds its body's
 * reservation of server.max_buffered_bytes (or a slow link). The gateway answers and closes, or reads it to its end.
 */
export class SlowUpload {
  private readonly socket: Socket;
  private readonly body: Buffer;
  private sent = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The gateway's answer once the connection closed; undefined: none came. */
  readonly answer: Promise<ParsedResponse | undefined>;
  /** The connection closed. */
  closed = false;

  constructor(url: string, options: SlowUploadOptions) {
    this.body = chatOfSize(options.size);
    const connection = uploadConnection(url, () => {
      this.closed = true;
      clearInterval(this.timer);
    });
    this.socket = connection.socket;
    this.answer = connection.answer;
    this.socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nX-Gateway-Key: ${options.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nConnection: close\r\nContent-Length: ${options.size}\r\n\r\n`,
    );
    this.send(options.first ?? 0);
    const piece = options.piece ?? 0;
    if (piece > 0) this.timer = setInterval(() => this.send(piece), options.everyMs ?? 100);
  }

  /** Leaves without finishing. */
  abort(): void {
    clearInterval(this.timer);
    this.socket.destroy();
  }

  private send(bytes: number): void {
    if (this.closed || this.sent >= this.body.length) return clearInterval(this.timer);
    const to = Math.min(this.body.length, this.sent + bytes);
    this.socket.write(this.body.subarray(this.sent, to));
    this.sent = to;
  }
}

/**
 * A raw connection for an upload, and the gateway's answer once it closed (undefined: none came); `onClose`
 * hears whether anything was received.
 */
export function uploadConnection(
  url: string,
  onClose: (answered: boolean) => void,
): { socket: Socket; answer: Promise<ParsedResponse | undefined> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const received: Buffer[] = [];
  socket.on('data', (c: Buffer) => received.push(c));
  socket.on('error', () => undefined); // a refused upload's writes meet a closed connection
  const answer = new Promise<ParsedResponse | undefined>((resolve) =>
    socket.on('close', () => {
      onClose(received.length > 0);
      resolve(parseResponses(Buffer.concat(received)).responses[0]);
    }),
  );
  return { socket, answer };
}

/** A valid chat request of exactly `size` bytes (its message padded). */
export function chatOfSize(size: number): Buffer {
  const empty = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '' }] });
  const pad = size - Buffer.byteLength(empty);
  if (pad < 0) throw new Error(`a chat request takes at least ${empty.length} bytes`);
  return Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a'.repeat(pad) }] }));
}
