import { connect } from 'node:net';
import { sleep } from '../helpers/wait';
import { expect } from 'chai';
import fc from 'fast-check';
import { request } from 'undici';
import { ERROR_CODES } from '../../core/errors';
import { OPENAI_KEY, type TestGateway } from '../helpers/gateway';
import { FaultyUpstream } from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  call,
  chatBody,
  expectGatewayError,
  expectNoSecrets,
  expectWellFormed,
  jsonHeaders,
  rawExchange,
  recordCount,
  round,
  settledCount,
  settledHeapMb,
  startGateway,
  waitForCount,
} from '../helpers/reliability';

const ENDPOINT_PATHS = [
  '/v1/chat/completions',
  '/v1/messages',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/audio/speech',
  '/v1/audio/transcriptions',
  '/v1/audio/translations',
  '/v1/images/generations',
  '/v1/images/edits',
  '/v1/images/variations',
  '/v1/models',
];
const BODY_LIMIT = 2 * 1024 * 1024;
const RUNS = Number(process.env.TOLLGATE_FUZZ_RUNS ?? 250);

/** Header values as a client could put them on the wire: visible ASCII, spaces, tabs and obs-text (never CR/LF). */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.string({ unit: fc.constantFrom('a', ' ', '\t', '\u0080', '\u00ff', '{', '"', ',', ';', '='), maxLength: 40 }),
  fc.integer({ min: 1, max: 9000 }).map((n) => 'v'.repeat(n)),
  fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
);
const headerName = fc.oneof(
  fc.constantFrom(
    'x-gateway-key',
    'x-gateway-metadata',
    'x-gateway-metadata-agent',
    'x-gateway-provider',
    'content-type',
    'authorization',
    'x-api-key',
    'anthropic-version',
    'accept-encoding',
    'expect',
    'connection',
    'upgrade',
    'te',
    'x-forwarded-for',
    'cookie',
    'x-gateway-metadata-customer-id',
  ),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/),
  fc.stringMatching(/^x-gateway-metadata-[A-Za-z0-9_.-]{1,70}$/),
);
const segment = fc.oneof(
  fc.constantFrom(
    'v1',
    'chat',
    'completions',
    'messages',
    '..',
    '.',
    '',
    '%2e%2e',
    '%2f',
    '%2F',
    '%00',
    '%5c',
    '\\',
    'api',
    'usage',
    ';',
    '%20',
    'é',
    '%C0%AF',
    '*',
  ),
  fc.stringMatching(/^[A-Za-z0-9._~%-]{0,12}$/),
);
const path = fc.oneof(
  fc.constantFrom(...ENDPOINT_PATHS),
  fc
    .tuple(fc.constantFrom(...ENDPOINT_PATHS), fc.array(segment, { maxLength: 3 }))
    .map(([p, s]) => `${p}/${s.join('/')}`),
  fc.array(segment, { minLength: 1, maxLength: 6 }).map((s) => `/${s.join('/')}`),
  fc
    .tuple(fc.constantFrom(...ENDPOINT_PATHS), fc.stringMatching(/^[A-Za-z0-9=&%/.?@:+-]{0,40}$/))
    .map(([p, q]) => `${p}?${q}`),
);
const method = fc.oneof(
  fc.constantFrom('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'POST', 'POST'),
  fc.stringMatching(/^[A-Z]{1,10}$/),
);

const deep = (depth: number, open: string, close: string, inner = '"x"') =>
  `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
const multipart = (fields: Record<string, string>, boundary = 'XyZ') =>
  Object.entries(fields)
    .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('') + `--${boundary}--\r\n`;

const body = fc.oneof(
  fc.constant(chatBody()),
  fc.constant(chatBody({ stream: true })),
  fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
  fc
    .record(
      {
        model: fc.oneof(
          fc.string(),
          fc.integer(),
          fc.constant(null),
          fc.array(fc.string()),
          fc.constantFrom('gpt-4o-mini', 'claude-haiku-4-5', 'sonar', 'mistral-small', 'text-embedding-3-small'),
        ),
        stream: fc.oneof(fc.boolean(), fc.string(), fc.constant(null)),
        messages: fc.jsonValue(),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc
    .integer({ min: 1, max: 50_000 })
    .map((d) => `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":${deep(d, '[', ']')}}]}`),
  fc.integer({ min: 1, max: 50_000 }).map((d) => deep(d, '{"a":', '}', '1')),
  fc
    .integer({ min: 1, max: 1_500_000 })
    .map((n) => `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"${'z'.repeat(n)}"}]}`),
  fc.uint8Array({ maxLength: 2000 }).map((a) => Buffer.from(a).toString('latin1')),
  fc.constant('{"model": "gpt-4o-mini", '),
  fc.constant(''),
);

/** One raw HTTP/1.1 request: the method, target and headers exactly as given, the body with a correct length. */
function rawRequest(
  m: string,
  target: string,
  headers: [string, string][],
  payload: string,
  contentType?: string,
): Buffer {
  const lines = [`${m} ${target} HTTP/1.1`, 'Host: gateway.test'];
  if (contentType) lines.push(`Content-Type: ${contentType}`);
  for (const [k, v] of headers) lines.push(`${k}: ${v}`);
  const bytes = Buffer.from(payload, 'latin1');
  lines.push(`Content-Length: ${bytes.length}`, 'Connection: close');
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]);
}

/**
 * Hostile input: fuzzed paths, methods, headers, metadata and bodies (fast-check), deep nesting, huge strings,
 * multipart without a model, bodies that never end. Every answer is one well-formed HTTP response (the gateway's
 * error shape with a stable code, or the upstream's answer), the process stays up and its memory bounded.
 */
describe('reliability: hostile input', function () {
  this.timeout(120_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startGateway(
      upstream.url,
      `
server: { host: 127.0.0.1, port: 0, body_limit: ${BODY_LIMIT} }
plugins:
  - use: auth
    options: { lockout: { enabled: false } }
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options: { flush_interval_ms: 20 }
`,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it(`fuzzed requests on the raw socket (${RUNS} runs): one well-formed answer each, never a 5xx of the gateway`, async () => {
    const before = await settledHeapMb();
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        method,
        path,
        fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }),
        body,
        fc.boolean(),
        fc.boolean(),
        async (m, target, headers, payload, withKey, json) => {
          const all: [string, string][] = withKey
            ? [['X-Gateway-Key', gw.key], ['Authorization', `Bearer ${OPENAI_KEY}`], ...headers]
            : headers;
          const ex = await rawExchange(
            gw.url,
            rawRequest(m, target, all, payload, json ? 'application/json' : undefined),
            10_000,
          );
          const r = expectWellFormed(
            ex,
            `${m} ${target.slice(0, 80)} headers=${JSON.stringify(headers).slice(0, 200)}`,
            ERROR_CODES,
          );
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status >= 500) {
            const code = JSON.parse(r.body.toString()).error.code;
            expect(['upstream_unreachable', 'upstream_timeout'], `the gateway failed: ${r.body}`).to.include(code);
          }
        },
      ),
      { numRuns: RUNS, seed: Number(process.env.TOLLGATE_FUZZ_SEED ?? Date.now() % 2 ** 31), endOnFailure: true },
    );
    const after = await settledHeapMb();
    console.log(
      `      statuses: ${[...statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}x${n}`)
        .join(' ')}; heap ${round(before)} -> ${round(after)} MB`,
    );
    recordFigures('hostile-input', 'fuzz', {
      runs: RUNS,
      statuses: Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])),
      heap_before_mb: round(before),
      heap_after_mb: round(after),
    });
    expect(after - before).to.be.lessThan(20);
    expect(gw.gateway.proxy.inflight).to.equal(0);
  });

  it('fuzzed metadata (JSON header and flat headers): 200 or 400 invalid_metadata, nothing else', async () => {
    const tagValue = fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null), fc.jsonValue());
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.dictionary(fc.string({ maxLength: 70 }), tagValue, { maxKeys: 40 }),
          fc.jsonValue(),
          fc.array(fc.jsonValue()),
        ),
        fc.dictionary(
          fc.stringMatching(/^[A-Za-z0-9_.-]{1,70}$/),
          fc.string({
            unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
            minLength: 0,
            maxLength: 300,
          }),
          { maxKeys: 5 },
        ),
        async (meta, flat) => {
          const headers = jsonHeaders(gw, { 'x-gateway-metadata': JSON.stringify(meta) ?? 'null' });
          for (const [k, v] of Object.entries(flat)) headers[`x-gateway-metadata-${k}`] = v;
          const res = await call(gw, '/v1/chat/completions', { body: chatBody(), headers });
          if (res.status !== 200) {
            expect(res.status, res.text).to.equal(400);
            expect(res.json.error.code, res.text).to.equal('invalid_metadata');
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('fuzzed JSON bodies on every endpoint: the upstream answer or a 4xx with a stable code, and a record each', async () => {
    const jsonEndpoints = [
      '/v1/chat/completions',
      '/v1/messages',
      '/v1/responses',
      '/v1/embeddings',
      '/v1/audio/speech',
      '/v1/images/generations',
    ];
    // This test's requests carry their own tag: the store must hold exactly one record per request, no more, no less.
    const run = `fuzz-json-${Date.now()}`;
    let mine = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...jsonEndpoints), body, async (endpoint, payload) => {
        const res = await call(gw, endpoint, {
          body: payload,
          headers: jsonHeaders(gw, { 'x-api-key': 'sk-ant-test-PLANTED-SECRET-0002', 'x-gateway-metadata-run': run }),
        });
        mine++;
        if (res.status >= 300) {
          expect(res.status, res.text.slice(0, 200)).to.be.within(400, 499);
          expect(ERROR_CODES[res.json?.error?.code as keyof typeof ERROR_CODES], res.text.slice(0, 200)).to.not.equal(
            undefined,
          );
        }
      }),
      { numRuns: 150 },
    );
    const query = `?filter[run]=${run}`;
    await waitForCount(gw, mine, 10_000, query);
    // Settled: nothing more arrives for this run after the writer caught up (no record twice).
    await sleep(200);
    expect(await recordCount(gw, query), 'one record per request that reached an endpoint').to.equal(mine);
  });

  it('deep nesting (200,000 levels) in a streamed request whose answer carries no usage: recorded, with an estimate', async () => {
    const before = await settledCount(gw);
    const payload = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":${deep(200_000, '[', ']')}},{"role":"user","content":"hello there"}],"tools":[${deep(100_000, '{"a":', '}', '1')}]}`;
    const res = await call(gw, '/v1/chat/completions', { body: payload });
    expect(res.status).to.equal(200);
    expect(await waitForCount(gw, before + 1)).to.equal(before + 1);
    const [latest] = (
      (await request(`${gw.adminUrl}/api/requests?limit=1`, {
        headers: { authorization: `Bearer ${'test-admin-token-PLANTED-SECRET-0003'}` },
      }).then((r) => r.body.json())) as any
    ).data;
    expect(latest).to.include({ status: 200, provenance: 'estimated' });
    // Counted by hand with the cookbook's framing (providers/tokenizer.ts): 3 to prime the reply, 3 per message plus its
    // role ("user": 1 token) for both, and "hello there" (2 tokens: "hello", " there"); content nested 200,000 deep
    // is no text of any API and the 100,000-deep tool cannot be serialised, so neither counts: 3 + 2 * 4 + 2 = 13.
    expect(latest.input_tokens).to.equal(13);
    // The answer is the recorded stream without usage, "This is a test.": 5 content events, one token each (the
    // same five open the recorded stream with usage, whose 12 content events report completion_tokens 12).
    expect(latest.output_tokens).to.equal(5);
  });

  it('a body of 1.9 MB without spaces in a stream that reports no usage: estimated without stalling other requests', async () => {
    const payload = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"${'z'.repeat(BODY_LIMIT - 100)}"}]}`;
    const big = call(gw, '/v1/chat/completions', { body: payload });
    const started = performance.now();
    let worst = 0;
    // Small requests meanwhile: the estimate of the big one must not hold the event loop for long.
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
      worst = Math.max(worst, performance.now() - t);
    }
    expect((await big).status).to.equal(200);
    console.log(`      slowest concurrent request ${round(worst)} ms (total ${round(performance.now() - started)} ms)`);
    recordFigures('hostile-input', 'big-body', {
      body_bytes: payload.length,
      concurrent_requests: 20,
      slowest_ms: round(worst),
    });
    expect(worst).to.be.lessThan(1000);
  });

  it('multipart without a model, with a broken boundary, cut short, or without a boundary: 400 with a stable code', async () => {
    const cases: [string, string, string][] = [
      // Well-formed, but no model field.
      ['multipart/form-data; boundary=XyZ', multipart({ file: 'abc', response_format: 'json' }), 'model_missing'],
      // The body's parts use another boundary than the header's: no part at all, the form ends unexpectedly.
      ['multipart/form-data; boundary=XyZ', multipart({ model: 'gpt-4o-mini' }, 'Other'), 'invalid_body'],
      // No boundary parameter.
      ['multipart/form-data', multipart({ model: 'whisper-1' }), 'invalid_body'],
      // The closing boundary never comes.
      [
        'multipart/form-data; boundary=XyZ',
        '--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1',
        'invalid_body',
      ],
      // A file part cut short. This one killed the gateway process before (an 'error' event on busboy's file
      // stream had no listener).
      [
        'multipart/form-data; boundary=XyZ',
        '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\nabcdef',
        'invalid_body',
      ],
      // A well-formed 100,000-character model name: read (up to the form's 64 KiB field limit) and refused as too long.
      [
        'multipart/form-data; boundary=XyZ',
        `--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\n${'w'.repeat(100_000)}\r\n--XyZ--\r\n`,
        'invalid_model',
      ],
    ];
    for (const [type, payload, code] of cases) {
      const res = await call(gw, '/v1/audio/transcriptions', {
        body: payload,
        headers: jsonHeaders(gw, { 'content-type': type }),
      });
      expectGatewayError(res, 400, code);
    }
  });

  it('oversized and repeated headers: Node answers 431 itself, repeated keys and metadata are refused, the process stays up', async () => {
    const head = (extra: string) =>
      Buffer.from(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}Content-Length: ${chatBody().length}\r\nConnection: close\r\n\r\n${chatBody()}`,
      );
    const huge = await rawExchange(gw.url, head(`X-Big: ${'b'.repeat(70_000)}\r\nX-Gateway-Key: ${gw.key}\r\n`));
    expect(expectWellFormed(huge, 'huge header', ERROR_CODES).status).to.equal(431);
    const many = await rawExchange(
      gw.url,
      head(
        `${Array.from({ length: 3000 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}X-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\n`,
      ),
    );
    expectWellFormed(many, '3000 headers', ERROR_CODES);
    const twoKeys = await rawExchange(
      gw.url,
      head(`X-Gateway-Key: ${gw.key}\r\nX-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\n`),
    );
    expect(JSON.parse(expectWellFormed(twoKeys, 'two keys', ERROR_CODES).body.toString()).error.code).to.equal(
      'gateway_key_invalid',
    );
    const twoMeta = await rawExchange(
      gw.url,
      head(
        `X-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nX-Gateway-Metadata: {"a":"1"}\r\nX-Gateway-Metadata: {"b":"2"}\r\n`,
      ),
    );
    expect(JSON.parse(expectWellFormed(twoMeta, 'two metadata', ERROR_CODES).body.toString()).error.code).to.equal(
      'invalid_metadata',
    );
    expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
  });

  it('chunked bodies that never end: others are served meanwhile; when the clients leave, nothing is held and each is recorded', async () => {
    const before = await settledCount(gw);
    const heapBefore = await settledHeapMb();
    const { hostname, port } = new URL(gw.url);
    const sockets = Array.from({ length: 40 }, () => {
      const s = connect(Number(port), hostname);
      s.on('error', () => undefined);
      s.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Gateway-Key: ${gw.key}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      return s;
    });
    // 40 slow uploads, 16 KB every 20 ms, for a second: 32 MB offered in all, the body limit caps what is kept.
    const drip = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write(`4000\r\n${'d'.repeat(0x4000)}\r\n`);
    }, 20);
    await sleep(300);
    const during = await Promise.all(
      Array.from({ length: 10 }, () => call(gw, '/v1/chat/completions', { body: chatBody() })),
    );
    expect(during.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
    await sleep(700);
    clearInterval(drip);
    // ~800 KB each so far, under the 2 MB body limit: all 40 are still being read, and nothing else is in flight.
    for (const deadline = Date.now() + 2000; gw.gateway.proxy.inflight !== 40 && Date.now() < deadline;)
      await sleep(10);
    expect(gw.gateway.proxy.inflight, 'the endless uploads still being read').to.equal(40);
    expect(
      sockets.filter((s) => s.destroyed),
      'uploads the gateway gave up on',
    ).to.deep.equal([]);
    const heapDuring = process.memoryUsage().heapUsed / 2 ** 20;
    for (const s of sockets) s.destroy();
    const deadline = Date.now() + 5000;
    while (gw.gateway.proxy.inflight > 0 && Date.now() < deadline) await sleep(20);
    expect(gw.gateway.proxy.inflight).to.equal(0);
    const stored = await waitForCount(gw, before + 50);
    expect(stored).to.equal(before + 50);
    const heapAfter = await settledHeapMb();
    console.log(
      `      40 endless uploads: heap ${round(heapBefore)} MB before, ${round(heapDuring)} MB during, ${round(heapAfter)} MB after`,
    );
    recordFigures('hostile-input', 'endless-uploads', {
      uploads: 40,
      heap_before_mb: round(heapBefore),
      heap_during_mb: round(heapDuring),
      heap_after_mb: round(heapAfter),
      records: 50,
    });
    expect(heapAfter - heapBefore).to.be.lessThan(15);
  });

  describe('afterwards', () => {
    it('the process is up and idle, and leaked no planted secret', async () => {
      expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
      expect(gw.gateway.proxy.inflight).to.equal(0);
      await expectNoSecrets(gw);
    });
  });
});
