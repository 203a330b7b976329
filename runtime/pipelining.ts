import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Pipelined requests that may wait on one connection before the gateway stops reading from it. */
export const MAX_QUEUED_PER_CONNECTION = 16;

/** One connection's requests: the one being answered, and those pipelined behind it, not yet started. */
interface Connection {
  answering: boolean;
  queued: [IncomingMessage, ServerResponse][];
  /** Reading stopped here (the queue is full); resumed once it has room again. */
  paused: boolean;
}

/**
 * Bounds HTTP/1.1 pipelining. Node starts every request it parses at once, also the ones a client pipelined
 * behind another, and holds each answer in memory until the answers before it are sent: a client sending
 * thousands of requests without reading its answers makes the gateway call the provider for all of them and hold
 * every answer (20 connections × 5,000 requests took RSS past 1.4 GB). Here a connection's requests are started one
 * at a time, in order (the order their answers must go out in anyway): the next once the previous answer is handed
 * to the socket, on the event loop's next turn. At most MAX_QUEUED_PER_CONNECTION wait; then the gateway stops
 * reading the connection until the client reads its answers (what one socket read held already is queued too: it was
 * parsed in one go). Requests still waiting when the connection closes, or once its last answer (`connection: close`)
 * went out, are dropped, never started.
 *
 * A client that does not pipeline (one request at a time per connection, as every SDK does) never waits here.
 */
export function boundPipelining(handle: RequestListener, maxQueued = MAX_QUEUED_PER_CONNECTION): RequestListener {
  const connections = new WeakMap<Socket, Connection>();

  const start = (conn: Connection, req: IncomingMessage, res: ServerResponse) => {
    conn.answering = true;
    res.once('close', () => next(conn, req.socket));
    void handle(req, res);
  };

  const next = (conn: Connection, socket: Socket) => {
    if (conn.queued.length === 0) {
      conn.answering = false;
      return;
    }
    // The next one starts on a later turn of the event loop: a cheap answer (a refusal) would otherwise start the
    // next request at once, and one connection's pipelined requests would run back to back, holding other clients.
    setImmediate(() => {
      const waiting = conn.queued.shift();
      if (!socket.writable || !waiting) {
        // Closed, or closing after its last answer (`connection: close`): the rest is never started.
        conn.answering = false;
        conn.queued.length = 0; // nothing of theirs to answer or release
        return;
      }
      start(conn, ...waiting);
      if (conn.paused && conn.queued.length < maxQueued) {
        conn.paused = false;
        resumeReading(socket);
      }
    });
  };

  return (req, res) => {
    const socket = req.socket;
    // Read after the connection's last answer (`connection: close`) or its close: never started, like those queued.
    if (!socket.writable) return;
    let conn = connections.get(socket);
    if (!conn) {
      conn = { answering: false, queued: [], paused: false };
      connections.set(socket, conn);
      const closing = conn;
      socket.once('close', () => (closing.queued.length = 0));
    }
    if (!conn.answering) return start(conn, req, res);
    conn.queued.push([req, res]);
    // Again on every request past the bound: Node resumes a paused socket itself once its writes drain.
    if (conn.queued.length >= maxQueued) {
      conn.paused = true;
      pauseReading(socket);
    }
  };
}

/**
 * Node's HTTP server reads its sockets through the parser, and resumes a paused socket whenever a request's body is
 * read (also an empty one) unless the socket carries its own `_paused` flag: the flag its backpressure sets (when
 * answers pile up unsent) and clears on drain, pausing and resuming the parser with it. The same flag is used here;
 * socket.pause() alone would be undone by the next request read.
 */
interface HttpServerSocket extends Socket {
  _paused?: boolean;
  parser?: { pause(): void; resume(): void } | null;
}

function pauseReading(socket: HttpServerSocket): void {
  socket._paused = true; // Node then pauses the parser too, once the bytes it holds are parsed
  socket.pause();
}

function resumeReading(socket: HttpServerSocket): void {
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}
