#!/usr/bin/env node
// Minimal, fast mock of an OpenAI-compatible (and Anthropic-style) LLM provider.
// node:http only, binds 127.0.0.1 only.
//
// Routes:
//   POST /v1/chat/completions   OpenAI chat.completion JSON, or SSE when body has "stream": true
//   POST /v1/messages           Anthropic message JSON, or SSE when body has "stream": true
//   POST /v1/audio/transcriptions  multipart upload: the body is counted, never buffered; answers {"text": ...}
//   GET  /v1/models             OpenAI model list
//   POST /v1/traces             an OTLP/HTTP (JSON) collector: counts the spans of each export, answers 200
//   GET  /__mock/stats          request counters + last request seen (for verifying a gateway forwards)
//   POST /__mock/reset          reset counters
//
// Env:
//   MOCK_PORT (or PORT)     listen port (default 18080); 0 = ephemeral, printed on stdout
//   MOCK_HOST               listen address (default 127.0.0.1; only loopback addresses are accepted)
//   MOCK_DELAY_MS           artificial latency before the response / first SSE event (default 0)
//   MOCK_STREAM_CHUNKS      number of content-delta chunks per SSE stream (default 20)
//   MOCK_CHUNK_DELAY_MS     delay between SSE chunks (default 0 = all chunks written back to back)
//   MOCK_LOG=1              log every request line + headers to stderr (debug only)
// A model name ending in -slow<N> (e.g. "gpt-4o-mini-slow20") streams with N ms between chunks for that request
// only, so one mock serves both the fast and the slow-provider scenarios (every gateway forwards the body as is).
// A model name ending in -wait<N> (e.g. "gpt-4o-mini-wait20") answers after N ms, like MOCK_DELAY_MS for that request.
import http from 'node:http';

const PORT = Number(process.env.MOCK_PORT ?? process.env.PORT ?? 18080);
const HOST = process.env.MOCK_HOST || '127.0.0.1';
const DELAY_MS = Number(process.env.MOCK_DELAY_MS || 0);
const CHUNKS = Math.max(1, Number(process.env.MOCK_STREAM_CHUNKS || 20));
const CHUNK_DELAY_MS = Number(process.env.MOCK_CHUNK_DELAY_MS || 0);
const LOG = process.env.MOCK_LOG === '1';

if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(HOST)) {
  console.error(`mock-upstream: refusing to bind non-loopback address ${HOST}`);
  process.exit(2);
}

// ---------------------------------------------------------------- fixed payloads
const CONTENT =
  'Sure! Here is a short overview of the topic. Large language model gateways sit between ' +
  'applications and model providers, adding routing, retries, caching, observability and ' +
  'access control. The key design goal is to add as little latency as possible.';
const TOKENS = (() => {
  // split CONTENT into CHUNKS pieces (word-ish boundaries), each piece is one delta
  const words = CONTENT.split(/(?<= )/);
  const out = [];
  for (let i = 0; i < CHUNKS; i++) {
    const a = Math.floor((i * words.length) / CHUNKS);
    const b = Math.floor(((i + 1) * words.length) / CHUNKS);
    out.push(words.slice(a, b).join('') || ' ');
  }
  return out;
})();
const PROMPT_TOKENS = 42;
const COMPLETION_TOKENS = 48;
const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini-2024-07-18';
const ANTHROPIC_DEFAULT_MODEL = 'claude-3-5-sonnet-20241022';
const FINGERPRINT = 'fp_0ba0d124f1';

let seq = 0;
const nextId = () => (++seq).toString(36).padStart(10, '0');
const now = () => Math.floor(Date.now() / 1000);

function modelOf(body, dflt) {
  const m = /"model"\s*:\s*"([^"\\]{1,200})"/.exec(body);
  return m ? m[1] : dflt;
}
const isStream = (body) => /"stream"\s*:\s*true/.test(body);

function openaiCompletion(model) {
  return JSON.stringify({
    id: `chatcmpl-${nextId()}`,
    object: 'chat.completion',
    created: now(),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: CONTENT, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: PROMPT_TOKENS,
      completion_tokens: COMPLETION_TOKENS,
      total_tokens: PROMPT_TOKENS + COMPLETION_TOKENS,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  });
}

function anthropicMessage(model) {
  return JSON.stringify({
    id: `msg_${nextId()}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: CONTENT }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: PROMPT_TOKENS,
      output_tokens: COMPLETION_TOKENS,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
}

// SSE event lists (array of strings, each a complete event incl. trailing blank line)
function openaiStreamEvents(model) {
  const id = `chatcmpl-${nextId()}`;
  const created = now();
  const head = `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"service_tier":"default","system_fingerprint":"${FINGERPRINT}","choices":`;
  const ev = [];
  for (let i = 0; i < CHUNKS; i++) {
    const delta = i === 0 ? { role: 'assistant', content: TOKENS[i], refusal: null } : { content: TOKENS[i] };
    ev.push(
      `data: ${head}[{"index":0,"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`,
    );
  }
  ev.push(`data: ${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}\n\n`);
  ev.push(
    `data: ${head}[],"usage":{"prompt_tokens":${PROMPT_TOKENS},"completion_tokens":${COMPLETION_TOKENS},"total_tokens":${PROMPT_TOKENS + COMPLETION_TOKENS},"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n`,
  );
  ev.push('data: [DONE]\n\n');
  return ev;
}

function anthropicStreamEvents(model) {
  const id = `msg_${nextId()}`;
  const ev = [];
  const e = (type, obj) => `event: ${type}\ndata: ${JSON.stringify(obj)}\n\n`;
  ev.push(
    e('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: PROMPT_TOKENS,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 1,
        },
      },
    }),
  );
  ev.push(
    e('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  );
  ev.push(e('ping', { type: 'ping' }));
  for (let i = 0; i < CHUNKS; i++) {
    ev.push(
      e('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: TOKENS[i] },
      }),
    );
  }
  ev.push(e('content_block_stop', { type: 'content_block_stop', index: 0 }));
  ev.push(
    e('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: COMPLETION_TOKENS },
    }),
  );
  ev.push(e('message_stop', { type: 'message_stop' }));
  return ev;
}

const MODELS_JSON = JSON.stringify({
  object: 'list',
  data: [OPENAI_DEFAULT_MODEL, 'gpt-4o-2024-08-06', 'gpt-4.1-mini', 'text-embedding-3-small'].map((id) => ({
    id,
    object: 'model',
    created: 1715367049,
    owned_by: 'system',
  })),
});

// ---------------------------------------------------------------- stats
const stats = { started_at: new Date().toISOString(), total: 0, by_route: {}, last: null };
function count(route, req) {
  stats.total++;
  stats.by_route[route] = (stats.by_route[route] || 0) + 1;
  stats.last = { route, method: req.method, url: req.url, headers: req.headers, at: Date.now() };
}

// ---------------------------------------------------------------- handlers
const JSON_HDRS = { 'content-type': 'application/json' };

function sendJson(res, status, str, extra) {
  const buf = Buffer.from(str);
  res.writeHead(status, { ...JSON_HDRS, 'content-length': buf.length, ...extra });
  res.end(buf);
}

function chunkDelayOf(model) {
  const m = /-slow(\d+)$/.exec(model);
  return m ? Number(m[1]) : CHUNK_DELAY_MS;
}

function sendSse(res, events, extra, delayMs = CHUNK_DELAY_MS) {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...extra,
  });
  if (delayMs <= 0) {
    for (const ev of events) res.write(ev);
    res.end();
    return;
  }
  let i = 0;
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  const tick = () => {
    if (closed) return;
    res.write(events[i++]);
    if (i < events.length) setTimeout(tick, delayMs);
    else res.end();
  };
  tick();
}

function waitOf(model) {
  const m = /-wait(\d+)$/.exec(model);
  return m ? Number(m[1]) : DELAY_MS;
}

function later(fn, delayMs = DELAY_MS) {
  if (delayMs > 0) setTimeout(fn, delayMs);
  else fn();
}

function handle(req, res, body) {
  const url = req.url.split('?')[0];
  if (LOG) console.error(`[mock] ${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
  if (req.method === 'POST' && url === '/v1/chat/completions') {
    count('chat', req);
    const model = modelOf(body, OPENAI_DEFAULT_MODEL);
    const hdrs = { 'x-request-id': `req_${nextId()}`, 'openai-processing-ms': String(DELAY_MS) };
    const wait = waitOf(model);
    if (isStream(body)) return later(() => sendSse(res, openaiStreamEvents(model), hdrs, chunkDelayOf(model)), wait);
    return later(() => sendJson(res, 200, openaiCompletion(model), hdrs), wait);
  }
  if (req.method === 'POST' && url === '/v1/messages') {
    count('messages', req);
    const model = modelOf(body, ANTHROPIC_DEFAULT_MODEL);
    const hdrs = { 'request-id': `req_${nextId()}` };
    if (isStream(body)) return later(() => sendSse(res, anthropicStreamEvents(model), hdrs, chunkDelayOf(model)));
    return later(() => sendJson(res, 200, anthropicMessage(model), hdrs));
  }
  if (req.method === 'GET' && url === '/v1/models') {
    count('models', req);
    return later(() => sendJson(res, 200, MODELS_JSON));
  }
  if (req.method === 'POST' && url === '/v1/traces') {
    // The OTLP/HTTP collector of the traced gateway target: takes each export, keeps only how many spans came.
    stats.otlp_exports = (stats.otlp_exports || 0) + 1;
    stats.otlp_spans = (stats.otlp_spans || 0) + body.split('"spanId"').length - 1;
    return sendJson(res, 200, '{}');
  }
  if (req.method === 'GET' && url === '/__mock/stats') return sendJson(res, 200, JSON.stringify(stats));
  if (req.method === 'POST' && url === '/__mock/reset') {
    stats.total = 0;
    stats.by_route = {};
    stats.last = null;
    return sendJson(res, 200, '{"ok":true}');
  }
  if (req.method === 'GET' && (url === '/' || url === '/health')) return sendJson(res, 200, '{"ok":true}');
  count('not_found', req);
  return sendJson(
    res,
    404,
    JSON.stringify({ error: { message: `Unknown route ${req.method} ${url}`, type: 'invalid_request_error' } }),
  );
}

const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url.split('?')[0] === '/v1/audio/transcriptions') {
    // Uploads are counted, not kept: the mock must not be what limits a 20 MB upload.
    let bytes = 0;
    req.on('data', (c) => {
      bytes += c.length;
    });
    req.on('end', () => {
      count('transcriptions', req);
      stats.last_upload_bytes = bytes;
      sendJson(res, 200, JSON.stringify({ text: `received ${bytes} bytes` }), { 'x-request-id': `req_${nextId()}` });
    });
    return;
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    req.resume();
    req.on('end', () => handle(req, res, ''));
    return;
  }
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => handle(req, res, parts.length === 1 ? parts[0].toString() : Buffer.concat(parts).toString()));
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;

server.listen(PORT, HOST, () => {
  const a = server.address();
  console.log(
    `mock-upstream listening on http://${a.address}:${a.port} delay=${DELAY_MS}ms chunks=${CHUNKS} chunk_delay=${CHUNK_DELAY_MS}ms`,
  );
});
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
