import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { adminGet, waitForRecords } from '../helpers/admin';
import { csvRows } from '../helpers/csv';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { rawRequest } from '../helpers/raw-http';
import { sseChunks, TestUpstream } from '../helpers/upstream';

/** A USD decimal string (as providers send it) as exact pico-USD, by string arithmetic. */
const picoOf = (usd: string): bigint => {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole + frac.padEnd(12, '0'));
};
/** Pico-USD as the shortest exact USD decimal string. */
const usdOf = (pico: bigint): string =>
  `${pico / 1_000_000_000_000n}.${(pico % 1_000_000_000_000n).toString().padStart(12, '0')}`
    .replace(/0+$/, '')
    .replace(/\.$/, '');

/**
 * Token counts worked out from the recordings, not by the gateway's tokenizer. The recorded OpenAI stream with usage
 * (openai/chat_stream_with_usage.sse) answered gpt-4o-mini's {"role":"user","content":"Say this is a test"} with 12
 * content events, one token each ("This", " is", " a", " test", ".", " How", ...), and reported prompt_tokens 12 and
 * completion_tokens 12. The same request and the cookbook's framing by hand: 3 (reply) + 3 (message) + 1 ("user")
 * + 5 ("Say", " this", " is", " a", " test") = 12.
 */
const SAY_THIS_IS_A_TEST = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say this is a test' }] };
const SAY_THIS_IS_A_TEST_TOKENS = 12;

describe('attribution tags and cost provenance', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    request(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-key': gw.key,
        authorization: `Bearer ${OPENAI_KEY}`,
        ...headers,
      },
      body: JSON.stringify(body),
    });

  beforeEach(async () => {
    upstream.reset();
    await upstream.start();
    gw = await startTestGateway(upstream.url);
  });
  afterEach(async () => {
    await gw.stop();
    await upstream.stop();
  });

  it('merges both header forms; the flat X-Gateway-Metadata-<Name> header wins a clash', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [] },
      {
        'X-Gateway-Metadata': JSON.stringify({ agent: 'from-json', feature: 'checkout', Team: 'payments' }),
        'X-Gateway-Metadata-Agent': 'from-flat',
        'X-Gateway-Metadata-Customer-Id': 'acme',
      },
    );
    await res.body.text();
    const [record] = await waitForRecords(gw, 1);
    expect(record.tags).to.deep.equal({
      agent: 'from-flat',
      feature: 'checkout',
      team: 'payments',
      customer_id: 'acme',
    });
  });

  const bad: [string, Record<string, string>][] = [
    ['invalid JSON', { 'X-Gateway-Metadata': '{agent: x}' }],
    ['a JSON array', { 'X-Gateway-Metadata': '["agent"]' }],
    ['a number value', { 'X-Gateway-Metadata': '{"agent": 7}' }],
    ['a nested object', { 'X-Gateway-Metadata': '{"agent": {"name": "x"}}' }],
    ['a null value', { 'X-Gateway-Metadata': '{"agent": null}' }],
    ['an empty value', { 'X-Gateway-Metadata-Agent': '' }],
    [
      'too many keys',
      {
        'X-Gateway-Metadata': JSON.stringify(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))),
      },
    ],
    ['an over-long key', { 'X-Gateway-Metadata': JSON.stringify({ ['k'.repeat(65)]: 'v' }) }],
    ['an over-long value', { 'X-Gateway-Metadata-Feature': 'v'.repeat(257) }],
    ['a key with odd characters', { 'X-Gateway-Metadata': '{"a b/c": "v"}' }],
    ['a key given twice after normalisation (Agent, agent)', { 'X-Gateway-Metadata': '{"Agent": "x", "agent": "y"}' }],
    ['the same key twice (JSON.parse would keep the last)', { 'X-Gateway-Metadata': '{"agent": "x", "agent": "y"}' }],
    [
      'two flat headers naming one key',
      { 'X-Gateway-Metadata-Customer-Id': 'a', 'X-Gateway-Metadata-Customer_Id': 'b' },
    ],
    ['a key reserved for a built-in dimension (model)', { 'X-Gateway-Metadata': '{"model": "x"}' }],
    ['a reserved key as a flat header (provider)', { 'X-Gateway-Metadata-Provider': 'x' }],
  ];
  for (const [name, headers] of bad) {
    it(`refuses ${name} with 400 invalid_metadata, never forwarded, and records the refusal`, async () => {
      const res = await post('/v1/chat/completions', { model: 'gpt-4o-mini', messages: [] }, headers);
      const body = (await res.body.json()) as any;
      expect(res.statusCode).to.equal(400);
      expect(body.error.code).to.equal('invalid_metadata');
      expect(body.error.message).to.match(/X-Gateway-Metadata/);
      expect(upstream.received).to.have.length(0);
      const [record] = await waitForRecords(gw, 1);
      expect(record.error_code).to.equal('invalid_metadata');
      expect(record.status).to.equal(400);
    });
  }

  const rawChat = (tagHeader: string, encoding: BufferEncoding = 'utf8') =>
    rawRequest(
      gw.url,
      [
        'POST /v1/chat/completions HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        `X-Gateway-Key: ${gw.key}`,
        `Authorization: Bearer ${OPENAI_KEY}`,
        tagHeader,
      ].join('\r\n'),
      JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      encoding,
    );

  it('refuses a flat tag header sent twice (Node would join the values as "a, b") with 400 invalid_metadata', async () => {
    const res = await rawChat('X-Gateway-Metadata-Agent: a\r\nX-Gateway-Metadata-Agent: b');
    expect(res.status).to.equal(400);
    expect(JSON.parse(res.body).error).to.include({ code: 'invalid_metadata' });
    expect(upstream.received).to.have.length(0);
  });

  it('decodes tag values as UTF-8 in both header forms (Node hands header bytes over as latin1)', async () => {
    const res = await rawChat(
      'X-Gateway-Metadata: {"customer_id":"Zürich","agent":"日本語-bot"}\r\nX-Gateway-Metadata-Feature: Café crème',
    );
    expect(res.status).to.equal(200);
    const [record] = await waitForRecords(gw, 1);
    expect(record.tags).to.deep.equal({ customer_id: 'Zürich', agent: '日本語-bot', feature: 'Café crème' });
    const usage = await adminGet(gw, '/api/usage?group_by=feature');
    expect(usage.rows.map((r: any) => r.group.feature)).to.deep.equal(['Café crème']);
  });

  it('refuses tag bytes that are not UTF-8 with 400 invalid_metadata, in both header forms', async () => {
    // Written as latin1, "ü" is the single byte 0xFC: not UTF-8.
    for (const header of ['X-Gateway-Metadata: {"customer_id":"Zürich"}', 'X-Gateway-Metadata-Customer-Id: Zürich']) {
      const res = await rawChat(header, 'latin1');
      expect(res.status, header).to.equal(400);
      const error = JSON.parse(res.body).error;
      expect(error.code).to.equal('invalid_metadata');
      expect(error.message).to.match(/not valid UTF-8/);
    }
    expect(upstream.received).to.have.length(0);
  });

  it('accepts exactly the limits (32 keys, 64-char key, 256-char value)', async () => {
    const tags = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`k${i}`, 'v']));
    tags['k'.repeat(64)] = 'v'.repeat(256);
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [] },
      { 'X-Gateway-Metadata': JSON.stringify(tags) },
    );
    await res.body.text();
    expect(res.statusCode).to.equal(200);
  });

  it('a stream without usage is recorded with tokenizer counts, marked estimated', async () => {
    const res = await post('/v1/chat/completions', { ...SAY_THIS_IS_A_TEST, stream: true });
    const text = await res.body.text();
    expect(text).to.include('[DONE]');
    const [r] = await waitForRecords(gw, 1);
    expect(r.provenance).to.equal('estimated');
    expect(r.input_tokens).to.equal(SAY_THIS_IS_A_TEST_TOKENS);
    // The recorded stream without usage says "This is a test.": 5 content events, one token each (see above).
    expect(r.output_tokens).to.equal(5);
    // gpt-4o-mini in pricing/catalog.json: $0.15 and $0.60 per million: 12 x 0.15 + 5 x 0.60 = $4.8 per million.
    expect(r.cost_pico).to.equal('4800000');
  });

  it('a stream the client cuts is recorded as partial, with what was streamed', async () => {
    const events = sseChunks(fixtureBytes('anthropic/messages_stream.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 80 }));
    const controller = new AbortController();
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, 'x-api-key': 'sk-ant-x' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
      signal: controller.signal,
    });
    const it = res.body[Symbol.asyncIterator]();
    await it.next();
    await sleep(200);
    controller.abort();
    const [r] = await waitForRecords(gw, 1);
    expect(r.provenance).to.equal('partial');
    expect(r.status).to.equal(200);
    expect(r.error_code).to.equal('request_aborted');
    expect(r.input_tokens, 'input from message_start').to.equal(17);
  });

  it('a model without a price is recorded as unpriced: cost unknown, never $0 (header, API, CSV)', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'codestral-nobody-priced-this', messages: [] },
      { 'X-Gateway-Metadata-Agent': 'coder' },
    );
    await res.body.text();
    expect(res.headers['x-gateway-cost']).to.equal('unknown');
    const priced = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [] },
      { 'X-Gateway-Metadata-Agent': 'coder' },
    );
    await priced.body.text();
    const records = await waitForRecords(gw, 2);
    const r = records.find((x) => x.model === 'codestral-nobody-priced-this');
    const known = records.find((x) => x.model === 'gpt-4o-mini');
    expect(r.provenance).to.equal('unpriced');
    expect(r.cost_usd).to.equal(null);
    // The usage the recorded answer reports is kept, price or not: input without the cached part.
    const { usage } = fixtureJson('openai/chat_completion_cached_tokens.json');
    expect(r).to.include({
      input_tokens: usage.prompt_tokens - usage.prompt_tokens_details.cached_tokens,
      cache_read_tokens: usage.prompt_tokens_details.cached_tokens,
      output_tokens: usage.completion_tokens,
    });
    expect(priced.headers['x-gateway-cost']).to.equal(known.cost_usd);

    const byModel = await adminGet(gw, '/api/usage?group_by=model');
    const row = byModel.rows.find((x: any) => x.group.model === 'codestral-nobody-priced-this');
    expect(row).to.include({ unpriced_count: 1, cost_usd: null, cost_pico: null, cost_status: 'unknown' });
    expect(byModel.rows.find((x: any) => x.group.model === 'gpt-4o-mini')).to.include({
      cost_pico: known.cost_pico,
      cost_status: 'known',
    });
    // Some records of the group priced, some not: the known sum, flagged as a lower bound.
    const [coder] = (await adminGet(gw, '/api/usage?group_by=agent')).rows;
    expect(coder).to.include({
      requests: 2,
      unpriced_count: 1,
      cost_pico: known.cost_pico,
      cost_usd: known.cost_usd,
      cost_status: 'lower_bound',
    });

    const csv = await request(`${gw.adminUrl}/api/usage.csv?group_by=model`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    const [header, ...lines] = csvRows(await csv.body.text());
    expect(header).to.include.members([
      'cost_usd',
      'cost_status',
      'unpriced_count',
      'estimated_count',
      'partial_count',
    ]);
    const cell = (line: string[], name: string) => line[header.indexOf(name)];
    const unpricedLine = lines.find((l) => l[0] === 'codestral-nobody-priced-this')!;
    expect([
      cell(unpricedLine, 'cost_usd'),
      cell(unpricedLine, 'cost_status'),
      cell(unpricedLine, 'cost_share_pct'),
      cell(unpricedLine, 'unpriced_count'),
    ]).to.deep.equal(['', 'unknown', '', '1']);
    const pricedLine = lines.find((l) => l[0] === 'gpt-4o-mini')!;
    expect([cell(pricedLine, 'cost_usd'), cell(pricedLine, 'cost_status')]).to.deep.equal([known.cost_usd, 'known']);
  });

  it("OpenRouter BYOK: records the full cost, the provider's upstream charge plus OpenRouter's fee", async () => {
    const file = 'openrouter/chat_completion_byok_synthetic.json';
    upstream.respondWith((req) =>
      req.mount === 'openrouter'
        ? { headers: { 'content-type': 'application/json' }, body: fixtureBytes(file) }
        : undefined,
    );
    const res = await post(
      '/v1/chat/completions',
      { model: 'anthropic/claude-sonnet-4.5', messages: [] },
      { 'X-Gateway-Provider': 'openrouter' },
    );
    expect(Buffer.from(await res.body.arrayBuffer()).equals(fixtureBytes(file))).to.equal(true);
    const { usage, model } = fixtureJson(file);
    const full = picoOf(String(usage.cost)) + picoOf(String(usage.cost_details.upstream_inference_cost));
    expect(res.headers['x-gateway-cost']).to.equal(usdOf(full));
    const [r] = await waitForRecords(gw, 1);
    expect(r).to.include({
      provenance: 'measured',
      price_version: 'provider-reported',
      cost_pico: full.toString(),
      served_model: model,
    });
  });

  it('an error event mid-stream on a 200 (Anthropic overloaded_error) is recorded partial, output counted by the tokenizer', async () => {
    // The recorded stream up to " Captain", then Anthropic's documented mid-stream error event; then the response ends.
    const overloaded =
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const events = [...sseChunks(fixtureBytes('anthropic/messages_stream.sse')).slice(0, 5), Buffer.from(overloaded)];
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events }));
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, 'x-api-key': 'sk-ant-x' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    });
    expect(res.statusCode).to.equal(200);
    expect(await res.body.text()).to.equal(Buffer.concat(events).toString('utf8'));
    const [r] = await waitForRecords(gw, 1);
    expect(r).to.include({
      provenance: 'partial',
      status: 200,
      error_code: 'upstream_overloaded_error',
      input_tokens: 17,
    });
    // message_start said output_tokens 1; the client got "- Captain": its tokenizer count replaces the stale one.
    // cl100k_base stands in for Anthropic's tokenizer: "-" and " Captain" are one token each (ids 12 and 22022).
    expect(r.output_tokens).to.equal(2);
    // claude-sonnet-4-5 in pricing/catalog.json: $3 and $15 per million: 17 x 3 + 2 x 15 = $81 per million.
    expect(r.cost_pico).to.equal('81000000');
    expect((await adminGet(gw, '/api/usage')).total).to.include({
      partial_count: 1,
      estimated_count: 0,
      error_count: 1,
    });
  });

  it('an OpenAI error chunk mid-stream on a 200 is recorded partial, with tokenizer counts', async () => {
    // The OpenAI SDKs raise on a stream chunk holding an "error" object; here after "This is".
    const error =
      'data: {"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}\n\n';
    const events = [...sseChunks(fixtureBytes('openai/chat_stream_without_usage.sse')).slice(0, 3), Buffer.from(error)];
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events }));
    const res = await post('/v1/chat/completions', { ...SAY_THIS_IS_A_TEST, stream: true });
    await res.body.text();
    const [r] = await waitForRecords(gw, 1);
    expect(r).to.include({ provenance: 'partial', status: 200, error_code: 'upstream_server_error' });
    // "This" and " is": two content events of the recording, one token each (see above).
    expect(r).to.include({ input_tokens: SAY_THIS_IS_A_TEST_TOKENS, output_tokens: 2 });
  });

  it('reads usage from gzip-compressed streams and bodies while relaying the compressed bytes unchanged', async () => {
    const sse = gzipSync(fixtureBytes('openai/chat_stream_with_usage.sse'));
    // Split the compressed stream at arbitrary points, as a network would.
    const parts = [sse.subarray(0, 100), sse.subarray(100, 1000), sse.subarray(1000)];
    upstream.respondWith((req) =>
      JSON.parse(req.body.toString()).stream
        ? { headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }, body: parts, delayMs: 10 }
        : {
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
            body: gzipSync(fixtureBytes('openai/chat_completion_cached_tokens.json')),
          },
    );
    const streamed = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [], stream: true },
      { 'accept-encoding': 'gzip' },
    );
    expect(Buffer.from(await streamed.body.arrayBuffer()).equals(sse)).to.equal(true);
    const whole = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [] },
      { 'accept-encoding': 'gzip' },
    );
    await whole.body.arrayBuffer();
    expect(whole.headers['content-encoding']).to.equal('gzip');
    expect(whole.headers['x-gateway-cost']).to.match(/^0\.\d+$/);
    const records = await waitForRecords(gw, 2);
    // Each record carries the usage its recorded answer reports, read through the compression.
    const reported = {
      stream: 12,
      json: fixtureJson('openai/chat_completion_cached_tokens.json').usage.completion_tokens,
    };
    for (const r of records) {
      const kind = r.streamed ? 'stream' : 'json';
      expect(r.provenance, `${kind} record`).to.equal('measured');
      expect(r.output_tokens, `${kind} record`).to.equal(reported[kind]);
    }
  });

  it('writes no provider key, gateway key or admin token to any log line', async () => {
    const res = await post('/v1/chat/completions', { model: 'gpt-4o-mini', messages: [] });
    await res.body.text();
    const bad = await post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [] },
      { 'x-gateway-key': 'tg_wrong_PLANTED-SECRET-0004' },
    );
    await bad.body.text();
    await waitForRecords(gw, 2);
    const all = gw.logs.join('\n');
    expect(gw.logs.length).to.be.greaterThan(1);
    for (const secret of [OPENAI_KEY, gw.key, 'PLANTED-SECRET']) expect(all).to.not.include(secret);
  });
});
