/**
 * The loopback mock provider used by `tollgate demo`: it answers chat completions (OpenAI-compatible) and
 * messages (Anthropic) in the providers' real wire formats, with the usage the demo asks for in the
 * `x-demo-usage: input,output,cache_read,reasoning` header and the status in `x-demo-status`. A streamed
 * chat completion carries no usage (the gateway then counts tokens itself: provenance "estimated").
 * It listens on 127.0.0.1 only and never calls anything.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const REPLIES = [
  'Thanks for reaching out! I have reset the integration token; the sync should resume within a few minutes.',
  'Here is a summary of the document: revenue grew 12% quarter over quarter, driven by the enterprise plan.',
  'The pull request looks good overall. Two suggestions: extract the retry loop and add a test for the timeout path.',
  'Based on the three sources, the most likely cause is a stale DNS cache on the edge nodes.',
  'Draft: Hi Dana, following up on our call last week about the analytics rollout for your team.',
];

export class DemoUpstream {
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: { model?: string; stream?: boolean } = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      // answered below as a 400
    }
    const [input, output, cacheRead, reasoning] = String(req.headers['x-demo-usage'] ?? '10,20,0,0')
      .split(',')
      .map((n) => Number(n) || 0);
    const status = Number(req.headers['x-demo-status'] ?? 200);
    const path = (req.url ?? '').split('?')[0];
    const json = (code: number, value: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (!body.model)
      return json(400, { error: { message: 'demo upstream: model missing', type: 'invalid_request_error' } });
    if (status !== 200) return json(status, simulatedFailure(path, status));
    const answer: DemoAnswer = { model: body.model, text: REPLIES[(input + output) % REPLIES.length] };
    if (path.endsWith('/messages')) return json(200, message(answer, input, output, cacheRead));
    if (!path.endsWith('/chat/completions'))
      return json(404, { error: { message: `demo upstream: no route for ${path}` } });
    if (body.stream) return streamChat(res, answer);
    json(200, {
      ...chatAnswer(answer, 'chat.completion'),
      choices: [{ index: 0, message: { role: 'assistant', content: answer.text }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: input + cacheRead,
        completion_tokens: output,
        total_tokens: input + cacheRead + output,
        prompt_tokens_details: { cached_tokens: cacheRead },
        completion_tokens_details: { reasoning_tokens: reasoning },
      },
    });
  }
}

interface DemoAnswer {
  model: string;
  text: string;
}

/** A provider's error body, in the messages or the chat-completions shape. */
function simulatedFailure(path: string, status: number): unknown {
  const message = 'demo upstream: simulated failure';
  if (path.endsWith('/messages'))
    return { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'api_error', message } };
  return { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } };
}

function message(answer: DemoAnswer, input: number, output: number, cacheRead: number): unknown {
  return {
    id: `msg_${randomBytes(8).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    content: [{ type: 'text', text: answer.text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: input,
      output_tokens: output,
      cache_read_input_tokens: cacheRead,
      cache_creation_input_tokens: 0,
    },
  };
}

function chatAnswer(answer: DemoAnswer, object: string) {
  return {
    id: `chatcmpl-${randomBytes(8).toString('hex')}`,
    object,
    created: Math.floor(Date.now() / 1000),
    model: answer.model,
  };
}

/** A streamed chat completion, word by word, without usage. */
function streamChat(res: ServerResponse, answer: DemoAnswer): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const head = chatAnswer(answer, 'chat.completion.chunk');
  const chunk = (choice: object) => `data: ${JSON.stringify({ ...head, choices: [{ index: 0, ...choice }] })}\n\n`;
  for (const word of answer.text.split(/(?<= )/)) res.write(chunk({ delta: { content: word }, finish_reason: null }));
  res.write(chunk({ delta: {}, finish_reason: 'stop' }));
  res.end('data: [DONE]\n\n');
}
