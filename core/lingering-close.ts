import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { bodyRelayed } from './body-memory';

/** How long, at most, a refused body is read on after its answer, and how many of its bytes. */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 64 * 2 ** 20;

/**
 * Closes a connection whose request body was refused before it was read to its end (413, 408)
 * without losing the answer. Closing a socket whose receive buffer holds bytes makes the kernel send a reset, and a
 * client still sending its body may get that reset before it reads the answer. So the answer is written, the
 * gateway's side half-closed (the client sees the answer, then the end), and what the client still sends is read and
 * dropped until it closes too, or for at most LINGER_MS and LINGER_BYTES, whichever comes first; then the socket is
 * destroyed. Nothing read is kept: the cost is the reading, bounded.
 *
 * Node's HTTP server closes a `connection: close` answer's socket with destroySoon() once the answer is written:
 * that call, on this socket alone, becomes the lingering close.
 */
export function closeLingering(req: IncomingMessage, limits = { ms: LINGER_MS, bytes: LINGER_BYTES }): void {
  const socket = req.socket as Socket & { destroySoon: () => void };
  const plain = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    if (req.complete) return plain(); // the whole body arrived: nothing is left to reset the connection
    const stop = () => socket.destroy();
    const timer = setTimeout(stop, limits.ms);
    socket.once('close', () => clearTimeout(timer));
    let read = 0;
    // The body's bytes still come through the HTTP parser as the request's data: counted, dropped.
    req.on('data', (chunk: Buffer) => {
      read += chunk.length;
      bodyRelayed(chunk.length); // dropped buffers count like relayed ones: young collections free them as they pass
      if (read > limits.bytes) stop();
    });
    req.once('end', stop); // the whole body arrived: nothing more is coming
    req.resume();
    socket.end();
  };
}
