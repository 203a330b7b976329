import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixtureBytes } from './fixtures';
import { sleep } from './wait';

/** What the test upstream received, for assertions on forwarding. */
export interface ReceivedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Which provider mount it hit (/openai/..., /anthropic/...). */
  mount: string;
  /** True when the client (the gateway) closed the connection before the response ended. */
  aborted: boolean;
  /** Resolves when the exchange is over (response ended or connection closed). */
  done: Promise<void>;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** One buffer is sent at once; an array is sent chunk by chunk with `delayMs` between chunks. */
  body: Buffer | Buffer[];
  delayMs?: number;
  /** Wait this long before sending headers. */
  headerDelayMs?: number;
  /** Wait for this before sending headers (requests held open until a whole batch was admitted or refused). */
  until?: Promise<unknown>;
}

export type Responder = (req: ReceivedRequest, json: any) => Reply | undefined;

const JSON_TYPE = { 'content-type': 'application/json' };
const SSE_TYPE = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/** Splits a recorded SSE body into its events (each with its blank-line terminator), as a server sends them. */
export function sseChunks(bytes: Buffer): Buffer[] {
  const text = bytes.toString('utf8');
  const parts = text.split(/(?<=\r?\n\r?\n)/);
  return parts.filter((p) => p.length > 0).map((p) => Buffer.from(p, 'utf8'));
}

const json = (file: string, status = 200): Reply => ({ status, headers: JSON_TYPE, body: fixtureBytes(file) });
const sse = (file: string): Reply => ({ status: 200, headers: SSE_TYPE, body: sseChunks(fixtureBytes(file)) });

/**
 * Default replies: recorded provider responses, chosen the way the real API would answer the request.
 * Mounts: each provider's base URL in tests is <upstream>/<slug>/..., so a request shows which provider it hit.
 */
export const recordedResponder: Responder = (req, body) => {
  const path = req.url.split('?')[0];
  const stream = body?.stream === true;
  if (path.endsWith('/chat/completions')) {
    if (req.mount === 'openrouter')
      return stream
        ? sse('openrouter/chat_stream_with_usage.sse')
        : json('openrouter/chat_completion_anthropic_cache_write.json');
    if (req.mount === 'perplexity') return json('perplexity/sonar_chat_completion.json');
    if (!stream) return json('openai/chat_completion_cached_tokens.json');
    return sse(
      body?.stream_options?.include_usage
        ? 'openai/chat_stream_with_usage.sse'
        : 'openai/chat_stream_without_usage.sse',
    );
  }
  if (path.endsWith('/messages'))
    return stream ? sse('anthropic/messages_stream.sse') : json('anthropic/messages_basic.json');
  if (path.endsWith('/responses')) return stream ? sse('openai/responses_stream.sse') : json('openai/responses.json');
  if (path.endsWith('/embeddings')) return json('openai/embeddings_float_reformatted.json');
  if (path.endsWith('/audio/transcriptions') || path.endsWith('/audio/translations'))
    return json('openai/audio_transcription_docs_example.json');
  if (path.endsWith('/audio/speech'))
    return { status: 200, headers: { 'content-type': 'audio/mpeg' }, body: Buffer.from('ID3\u0004fake-mpeg-frames') };
  if (path.includes('/images/')) return json('openai/images_generations.json');
  if (path.endsWith('/models'))
    return req.mount === 'openrouter' ? json('openrouter/models_list_truncated.json') : json('openai/models_list.json');
  return undefined;
};

/** A real HTTP server on loopback that replays recorded provider responses and records what it received. */
export class TestUpstream {
  readonly received: ReceivedRequest[] = [];
  private server: Server | undefined;
  private responder: Responder = recordedResponder;
  /** Sockets currently open to this server (to prove the gateway closes or reuses them). */
  openSockets = 0;
  /** Body bytes read so far, over all requests, counted as they arrive (to prove a body streams through). */
  bodyBytesArrived = 0;
  /** Requests whose body was cut before its end (the gateway gave up sending it). */
  bodiesCut = 0;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.openSockets++;
      socket.once('close', () => this.openSockets--);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Overrides the replies until reset(); return undefined to fall back to the recorded responder. */
  respondWith(responder: Responder): void {
    const fallback = recordedResponder;
    this.responder = (req, body) => responder(req, body) ?? fallback(req, body);
  }

  reset(): void {
    this.responder = recordedResponder;
    this.received.length = 0;
    this.bodyBytesArrived = 0;
    this.bodiesCut = 0;
  }

  last(): ReceivedRequest {
    const r = this.received.at(-1);
    if (!r) throw new Error('the test upstream received no request');
    return r;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return; // never started (e.g. its suite was skipped)
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) {
        chunks.push(c as Buffer);
        this.bodyBytesArrived += (c as Buffer).length;
      }
    } catch {
      this.bodiesCut++;
      return;
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
    let parsed: unknown;
    try {
      parsed = JSON.parse(record.body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const reply = this.responder(record, parsed);
    if (!reply) {
      res.writeHead(404, JSON_TYPE).end('{"error":{"message":"test upstream: no fixture for this path"}}');
      return;
    }
    if (reply.headerDelayMs) await sleep(reply.headerDelayMs);
    if (reply.until) await reply.until;
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, reply.headers ?? JSON_TYPE);
    if (Buffer.isBuffer(reply.body)) {
      res.end(reply.body);
      return;
    }
    res.flushHeaders();
    for (const [i, chunk] of reply.body.entries()) {
      if (res.destroyed) return;
      if (i > 0 && reply.delayMs) await sleep(reply.delayMs);
      if (res.destroyed) return;
      res.write(chunk);
    }
    res.end();
  }
}
