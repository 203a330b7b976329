import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fixtureBytes } from './fixtures';
import { recordedResponder, sseChunks, type ReceivedRequest, type Reply } from './upstream';
import { sleep } from './wait';

/**
 * A fault-injecting provider on loopback, for the reliability suites. It answers like TestUpstream (recorded
 * fixtures by default, same ReceivedRequest records, same open-socket count) and can also misbehave the ways
 * real providers and networks do: reset the connection, stall, send garbage, send huge bodies.
 * TestUpstream (upstream.ts) is left as it is; this is a separate server with a superset of its behaviour.
 */
export type Fault =
  /** Close the connection (FIN) without a response. */
  | { fault: 'close-before-headers' }
  /** Reset the connection (RST) without a response. */
  | { fault: 'reset-before-headers' }
  /** Send status and headers (with a content-length for all of `body`), `sendBytes` of it, then reset. */
  | { fault: 'reset-mid-body'; status?: number; headers?: Record<string, string>; body: Buffer; sendBytes: number }
  /** An SSE stream: `sendEvents` of `events`, then reset. */
  | { fault: 'reset-mid-stream'; events: Buffer[]; sendEvents: number; delayMs?: number }
  /** Never send headers (the request stays open until the client gives up). */
  | { fault: 'stall-before-headers' }
  /** Headers and `sendBytes` of a JSON body with a content-length, then silence. */
  | { fault: 'stall-mid-body'; body: Buffer; sendBytes: number }
  /** An SSE stream: `sendEvents` of `events`, then silence. */
  | { fault: 'stall-mid-stream'; events: Buffer[]; sendEvents: number }
  /** Bytes that are not HTTP at all. */
  | { fault: 'garbage'; bytes?: Buffer };

export type Action = Reply | Fault;
export type FaultResponder = (req: ReceivedRequest, json: any) => Action | undefined;

const JSON_TYPE = { 'content-type': 'application/json' };
export const SSE_TYPE = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/** Error bodies as providers send them (status, headers, bytes), for passthrough checks. */
export const PROVIDER_ERRORS = {
  openai500: {
    status: 500,
    headers: { ...JSON_TYPE, 'x-request-id': 'req_test_500' },
    body: Buffer.from(
      '{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}',
    ),
  },
  openai429: {
    status: 429,
    headers: { ...JSON_TYPE, 'retry-after': '3', 'x-ratelimit-remaining-requests': '0' },
    body: Buffer.from(
      '{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-test on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
    ),
  },
  openrouter429: {
    status: 429,
    headers: JSON_TYPE,
    body: fixtureBytes('openrouter/error_429_upstream_rate_limited.json'),
  },
  anthropic529: {
    status: 529,
    headers: { ...JSON_TYPE, 'request-id': 'req_test_529', 'x-should-retry': 'true' },
    body: Buffer.from(
      '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_test_529"}',
    ),
  },
  html502: {
    status: 502,
    headers: { 'content-type': 'text/html' },
    body: Buffer.from('<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>'),
  },
} satisfies Record<string, Reply & { status: number; headers: Record<string, string>; body: Buffer }>;

/** The recorded OpenAI chat stream (with usage), split into its events. */
export const chatStreamEvents = (): Buffer[] => sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));

export class FaultyUpstream {
  readonly received: ReceivedRequest[] = [];
  /** Sockets currently open to this server. */
  openSockets = 0;
  /** Connections accepted since start (keep-alive reuse shows as fewer connections than requests). */
  connections = 0;
  private server: Server | undefined;
  private responder: FaultResponder = recordedResponder;
  private readonly sockets = new Set<Socket>();
  private readonly waiters: { test: (r: ReceivedRequest) => boolean; resolve: (r: ReceivedRequest) => void }[] = [];

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.on('connection', (socket: Socket) => {
      this.openSockets++;
      this.connections++;
      this.sockets.add(socket);
      socket.once('close', () => {
        this.openSockets--;
        this.sockets.delete(socket);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Replies (or faults) until reset(); undefined falls back to the recorded responder. */
  respondWith(responder: FaultResponder): void {
    this.responder = (req, body) => responder(req, body) ?? recordedResponder(req, body);
  }

  reset(): void {
    this.responder = recordedResponder;
    this.received.length = 0;
  }

  last(): ReceivedRequest {
    const r = this.received.at(-1);
    if (!r) throw new Error('the faulty upstream received no request');
    return r;
  }

  /** Resolves with the first request (already received or still to come) that matches. */
  waitFor(test: (r: ReceivedRequest) => boolean, timeoutMs = 5000): Promise<ReceivedRequest> {
    const seen = this.received.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the faulty upstream did not receive the expected request')),
        timeoutMs,
      );
      this.waiters.push({ test, resolve: (r) => (clearTimeout(timer), resolve(r)) });
    });
  }

  /** Waits until at most `n` sockets are open (the gateway closed or never opened the rest). */
  async settleSockets(n: number, timeoutMs = 3000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.openSockets > n && Date.now() < deadline) await sleep(10);
    return this.openSockets;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return; // never started (e.g. its suite was skipped)
    for (const s of this.sockets) s.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the gateway went away while sending the body
    }
    let ended = false;
    let resolveDone!: () => void;
    const record: ReceivedRequest = {
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      body: Buffer.concat(chunks),
      mount: req.url!.split('/')[1],
      aborted: false,
      done: new Promise((r) => (resolveDone = r)),
    };
    res.once('finish', () => {
      ended = true;
      resolveDone();
    });
    res.once('close', () => {
      if (!ended) record.aborted = true;
      resolveDone();
    });
    this.received.push(record);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i].test(record)) this.waiters.splice(i, 1)[0].resolve(record);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(record.body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const action = this.responder(record, parsed);
    if (!action) {
      res.writeHead(404, JSON_TYPE).end('{"error":{"message":"faulty upstream: no fixture for this path"}}');
      return;
    }
    if ('fault' in action) return this.misbehave(action, res);
    await this.reply(action, res);
  }

  private async reply(reply: Reply, res: ServerResponse): Promise<void> {
    if (reply.headerDelayMs) await sleep(reply.headerDelayMs);
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, reply.headers ?? JSON_TYPE);
    if (Buffer.isBuffer(reply.body)) {
      res.end(reply.body);
      return;
    }
    res.flushHeaders();
    for (const [i, chunk] of reply.body.entries()) {
      if (i > 0 && reply.delayMs) await sleep(reply.delayMs);
      if (res.destroyed) return;
      if (!res.write(chunk)) await drained(res);
    }
    res.end();
  }

  private async misbehave(f: Fault, res: ServerResponse): Promise<void> {
    const socket = res.socket!;
    switch (f.fault) {
      case 'close-before-headers':
        socket.end();
        socket.destroySoon();
        return;
      case 'reset-before-headers':
        socket.resetAndDestroy();
        return;
      case 'garbage':
        socket.end(f.bytes ?? Buffer.from('\u0000\u0001 this is not HTTP \r\n\r\n\u00ff\u00fe'));
        return;
      case 'stall-before-headers':
        return; // the socket stays open; the request never gets an answer
      case 'reset-mid-body':
      case 'stall-mid-body': {
        const status = f.fault === 'reset-mid-body' ? (f.status ?? 200) : 200;
        const headers = f.fault === 'reset-mid-body' ? (f.headers ?? JSON_TYPE) : JSON_TYPE;
        res.writeHead(status, { ...headers, 'content-length': String(f.body.length) });
        res.write(f.body.subarray(0, f.sendBytes));
        if (f.fault === 'reset-mid-body') {
          await sleep(30);
          socket.resetAndDestroy();
        }
        return;
      }
      case 'reset-mid-stream':
      case 'stall-mid-stream': {
        res.writeHead(200, SSE_TYPE);
        res.flushHeaders();
        for (const chunk of f.events.slice(0, f.sendEvents)) {
          if (res.destroyed) return;
          res.write(chunk);
          await sleep(f.fault === 'reset-mid-stream' ? (f.delayMs ?? 5) : 5);
        }
        if (f.fault === 'reset-mid-stream' && !socket.destroyed) socket.resetAndDestroy();
        return;
      }
    }
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/** A loopback port with nothing listening on it (connections are refused). */
export async function refusedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return `http://127.0.0.1:${port}`;
}
