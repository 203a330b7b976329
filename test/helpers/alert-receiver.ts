/**
 * Real loopback receivers for alert channels: a generic webhook receiver and one that checks a body against Slack's
 * incoming-webhook format (text plus Block Kit blocks) and answers as Slack does (400 invalid_payload). Each can
 * answer 2xx, fail (a status, optionally with Retry-After), or hang; every body it takes is handed to the secret scan.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { recordAlertPayload } from './secret-scan';

export interface Received {
  at: number;
  body: string;
  json: any;
  headers: IncomingMessage['headers'];
  /** What the receiver answered (0: it hung). */
  status: number;
}

export type ReceiverMode = { kind: 'ok' } | { kind: 'fail'; status: number; retryAfter?: string } | { kind: 'hang' };

/** Slack's documented limits for what a webhook message may hold. */
export function slackShapeProblems(m: any): string[] {
  const problems: string[] = [];
  const text = (t: any, types: string[], max: number, where: string) => {
    if (!t || !types.includes(t.type) || typeof t.text !== 'string' || t.text.length === 0 || t.text.length > max)
      problems.push(`${where}: a ${types.join('/')} text object of 1..${max} characters`);
  };
  if (typeof m?.text !== 'string' || m.text.length === 0) problems.push('text: the notification text is missing');
  if (!Array.isArray(m?.blocks) || m.blocks.length === 0 || m.blocks.length > 50) return [...problems, 'blocks: 1..50'];
  m.blocks.forEach((b: any, i: number) => {
    const at = `blocks[${i}] (${b?.type})`;
    if (b.type === 'header') text(b.text, ['plain_text'], 150, at);
    else if (b.type === 'section') {
      if (b.text === undefined && b.fields === undefined) problems.push(`${at}: text or fields`);
      if (b.text !== undefined) text(b.text, ['mrkdwn', 'plain_text'], 3000, at);
      if (b.fields !== undefined) {
        if (!Array.isArray(b.fields) || b.fields.length > 10) problems.push(`${at}: at most 10 fields`);
        else b.fields.forEach((f: any, j: number) => text(f, ['mrkdwn', 'plain_text'], 2000, `${at}.fields[${j}]`));
      }
    } else if (b.type === 'context') {
      if (!Array.isArray(b.elements) || b.elements.length === 0 || b.elements.length > 10)
        problems.push(`${at}: 1..10 elements`);
      else b.elements.forEach((e: any, j: number) => text(e, ['mrkdwn', 'plain_text'], 3000, `${at}.elements[${j}]`));
    } else if (b.type === 'actions') {
      if (!Array.isArray(b.elements) || b.elements.length === 0 || b.elements.length > 25)
        problems.push(`${at}: 1..25 elements`);
      else
        b.elements.forEach((e: any, j: number) => {
          if (e.type !== 'button' || typeof e.url !== 'string' || !/^https?:\/\//.test(e.url))
            problems.push(`${at}.elements[${j}]: a button with a url`);
          text(e.text, ['plain_text'], 75, `${at}.elements[${j}].text`);
        });
    } else if (b.type !== 'divider') problems.push(`${at}: not a block type this message should use`);
  });
  return problems;
}

export class AlertReceiver {
  readonly received: Received[] = [];
  mode: ReceiverMode = { kind: 'ok' };
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private port = 0;

  constructor(
    readonly name: string,
    private readonly slack = false,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/${this.slack ? 'T000/B000/slack-path' : 'alerts'}`;
  }

  /** Bodies it answered 2xx, as JSON. */
  get taken(): any[] {
    return this.received.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.json);
  }

  /** Listens (again on the same port after a stop, so that a channel's URL stays valid). */
  async start(): Promise<void> {
    const server = createServer((req, res) => this.take(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Stops listening and drops every connection (a hung request included): the receiver is down. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private take(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      recordAlertPayload(body, this.name);
      let json: any;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const entry: Received = { at: Date.now(), body, json, headers: req.headers, status: 0 };
      this.received.push(entry);
      const mode = this.mode;
      if (mode.kind === 'hang') return;
      if (this.slack && slackShapeProblems(json).length > 0) return this.answer(res, entry, 400, 'invalid_payload');
      if (mode.kind === 'fail') {
        if (mode.retryAfter) res.setHeader('retry-after', mode.retryAfter);
        return this.answer(res, entry, mode.status, 'failing');
      }
      this.answer(res, entry, 200, 'ok');
    });
  }

  private answer(res: ServerResponse, entry: Received, status: number, text: string): void {
    entry.status = status;
    res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
  }
}
