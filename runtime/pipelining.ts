import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Pipelined requests that may wait on one connection before the gateway stops reading from it. */
export const MAX_QUEUED_PER_CONNECTION = 16;

/** Pipelined requests being answered at once, over all connections (server.pipelined_in_flight). */
export const PIPELINED_IN_FLIGHT = 2;

/** One connection's requests: the one being answered, and those pipelined behind it, not yet started. */
interface Connection {
  socket: Socket;
  answering: boolean;
  queued: [IncomingMessage, ServerResponse][];
  /** Reading stopped here (the queue is full); resumed once it has room again. */
  paused: boolean;
}

/** The bounds: requests waiting per connection, pipelined requests answered at once gateway-wide. */
export interface PipeliningBounds {
  maxQueued: number;
  inFlight: number;
}

/**
 * Bounds HTTP/1.1 pipelining. Node starts every request it parses at once, also the ones a client pipelined
 * behind another, and holds each answer in memory until the answers before it are sent: a client sending
 * thousands of requests without reading its answers makes the gateway call the provider for all of them and hold
 * every answer (20 connections × 5,000 requests took RSS past 1.4 GB). Here a connection's requests are started one
 * at a time, in order (the order their answers must go out in anyway): the next once the previous answer is handed
 * to the kernel (a client that does not read fills the socket's buffers, and its connection then waits). At most
 * `maxQueued` wait; then the gateway stops reading the connection until the client reads its answers (what one
 * socket read held already is queued too: it was parsed in one go). Requests still waiting when the connection
 * closes, or once its last answer (`connection: close`) went out, are dropped, never started.
 *
 * A pipelined request (sent before the answer to the one before it went out) takes the gateway's spare capacity:
 * all connections' pipelined requests share `inFlight` places, handed out round-robin between connections, one per
 * event-loop turn. However many connections pipeline, the proxy's thread answers at most that many of their
 * requests at once, and every other client's request is started as soon as it is read, as before. A client that
 * does not pipeline (one request at a time per connection, as every SDK does) never waits here.
 */
export function boundPipelining(
  handle: RequestListener,
  bounds: PipeliningBounds = { maxQueued: MAX_QUEUED_PER_CONNECTION, inFlight: PIPELINED_IN_FLIGHT },
): RequestListener {
  const connections = new WeakMap<Socket, Connection>();
  const turns = new PipelinedTurns(bounds, (conn) => startNext(conn));

  const start = (conn: Connection, req: IncomingMessage, res: ServerResponse, pipelined: boolean) => {
    conn.answering = true;
    res.once('close', () => {
      if (pipelined) turns.answered();
      if (conn.queued.length > 0) turns.ready(conn);
      else conn.answering = false;
    });
    void handle(req, res);
  };

  /** The connection's next waiting request, on its turn; false when it has none it may start. */
  const startNext = (conn: Connection): boolean => {
    const waiting = conn.queued.shift();
    if (!conn.socket.writable || !waiting) {
      // Closed, or closing after its last answer (`connection: close`): the rest is never started.
      conn.answering = false;
      conn.queued.length = 0; // nothing of theirs to answer or release
      return false;
    }
    start(conn, ...waiting, true);
    if (conn.paused && conn.queued.length < bounds.maxQueued) {
      conn.paused = false;
      resumeReading(conn.socket);
    }
    return true;
  };

  return (req, res) => {
    const socket = req.socket;
    // Read after the connection's last answer (`connection: close`) or its close: never started, like those queued.
    if (!socket.writable) return;
    let conn = connections.get(socket);
    if (!conn) {
      conn = { socket, answering: false, queued: [], paused: false };
      connections.set(socket, conn);
      const closing = conn;
      socket.once('close', () => (closing.queued.length = 0));
    }
    if (!conn.answering) return start(conn, req, res, false);
    conn.queued.push([req, res]);
    // Again on every request past the bound: Node resumes a paused socket itself once its writes drain.
    if (conn.queued.length >= bounds.maxQueued) {
      conn.paused = true;
      pauseReading(socket);
    }
  };
}

/**
 * The turns of pipelined requests: connections whose next request may start wait in one queue, served round-robin,
 * one started per event-loop turn (setImmediate: after the I/O of every other request read so far), and no more
 * than `inFlight` answered at once. A connection is in the queue at most once, since its next request is ready only
 * once the one before was answered.
 */
class PipelinedTurns {
  private readonly ready_: Connection[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly bounds: PipeliningBounds,
    private readonly startNext: (conn: Connection) => boolean,
  ) {}

  /** The connection's next request may start, on its turn. */
  ready(conn: Connection): void {
    this.ready_.push(conn);
    this.schedule();
  }

  /** A pipelined request's answer went out: its place is free. */
  answered(): void {
    this.inFlight--;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.ready_.length === 0 || this.inFlight >= this.bounds.inFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.turn();
    });
  }

  private turn(): void {
    // A connection closed while it waited starts nothing: the next one has this turn.
    for (let conn = this.ready_.shift(); conn; conn = this.ready_.shift()) {
      if (this.startNext(conn)) {
        this.inFlight++;
        break;
      }
    }
    this.schedule();
  }
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
