import { expect } from 'chai';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, type TestGateway } from '../helpers/gateway';
import {
  chatStreamEvents,
  FaultyUpstream,
  PROVIDER_ERRORS,
  refusedPortUrl,
  SSE_TYPE,
  type Action,
} from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  call,
  chatBody,
  expectGatewayError,
  expectNoSecrets,
  jsonHeaders,
  recordsFor,
  round,
  settledHeapMb,
  startGateway,
  streamBody,
} from '../helpers/reliability';

/** Time-outs of this suite (YAML upstream.*); undici checks them on a coarse timer (up to ~1 s late). */
const FIRST_BYTE_MS = 400;
const IDLE_MS = 400;
const CONNECT_MS = 400;
/** Nothing may take longer than the configured time-out plus this. */
const SLACK_MS = 1600;

/**
 * Faults: every misbehaviour of a provider gives the client either the provider's own answer unchanged or the
 * gateway's error (502/504, stable code), within the configured time-outs, never a crash, and a usage record
 * that says what happened.
 */
describe('reliability: upstream faults', function () {
  this.timeout(30_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;
  const clientTexts: string[] = [];
  /** How long each time-out took, as the client saw it (ms), for docs/reliability.md. */
  const timings: Record<string, number> = {};

  before(async () => {
    await upstream.start();
    const dead = await refusedPortUrl();
    gw = await startGateway(
      upstream.url,
      `
upstream: { connect_ms: ${CONNECT_MS}, first_byte_ms: ${FIRST_BYTE_MS}, idle_ms: ${IDLE_MS} }
providers:
  deadprov:
    type: openai-compatible
    base_url: "${dead}/v1"
    prefixes: [dead-]
    endpoints: [chat.completions]
`,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  beforeEach(() => upstream.reset());

  /** One request against a fault; returns the client's result and the request's stored record. */
  async function against(
    action: Action | undefined,
    body = chatBody(),
    headers = jsonHeaders(gw),
    path = '/v1/chat/completions',
  ) {
    if (action) upstream.respondWith(() => action);
    const res = await call(gw, path, { body, headers });
    clientTexts.push(res.text);
    const id = res.headers['x-gateway-request-id'] as string;
    expect(id, 'every answer carries its request id').to.be.a('string');
    const record = (await recordsFor(gw, [id])).get(id);
    return { res, record };
  }

  describe('transport failures give 502/504 with a stable code, within the time-outs', () => {
    it('connection refused: 502 upstream_unreachable', async () => {
      const { res, record } = await against(undefined, chatBody({ model: 'dead-model-1' }));
      expectGatewayError(res, 502, 'upstream_unreachable');
      timings.connection_refused_ms = round(res.ms);
      expect(res.ms).to.be.lessThan(CONNECT_MS + SLACK_MS);
      expect(record).to.include({
        status: 502,
        error_code: 'upstream_unreachable',
        provenance: 'failed',
        provider: 'deadprov',
        cost_pico: '0',
      });
    });

    for (const fault of ['close-before-headers', 'reset-before-headers', 'garbage'] as const) {
      it(`${fault}: 502 upstream_unreachable`, async () => {
        const { res, record } = await against({ fault });
        expectGatewayError(res, 502, 'upstream_unreachable');
        expect(res.ms).to.be.lessThan(SLACK_MS);
        expect(record).to.include({ status: 502, error_code: 'upstream_unreachable', provenance: 'failed' });
      });
    }

    it('reset mid-body (JSON answer): 502 upstream_unreachable, nothing of the partial body reaches the client', async () => {
      const body = fixtureBytes('openai/chat_completion_cached_tokens.json');
      const { res, record } = await against({ fault: 'reset-mid-body', body, sendBytes: 300 });
      expectGatewayError(res, 502, 'upstream_unreachable');
      expect(res.text).to.not.include(body.subarray(0, 300).toString());
      expect(record).to.include({ status: 502, error_code: 'upstream_unreachable', provenance: 'failed' });
    });

    it('stall before headers: 504 upstream_timeout after first_byte_ms, not later', async () => {
      const { res, record } = await against({ fault: 'stall-before-headers' });
      expectGatewayError(res, 504, 'upstream_timeout');
      timings.stall_before_headers_ms = round(res.ms);
      expect(res.ms).to.be.within(FIRST_BYTE_MS - 50, FIRST_BYTE_MS + SLACK_MS);
      expect(record).to.include({ status: 504, error_code: 'upstream_timeout', provenance: 'failed' });
      await upstream.last().done; // the stalled upstream request was abandoned, not left open
      expect(upstream.last().aborted).to.equal(true);
    });

    it('stall mid-body (JSON answer): 504 upstream_timeout after idle_ms', async () => {
      const body = fixtureBytes('openai/chat_completion_cached_tokens.json');
      const { res, record } = await against({ fault: 'stall-mid-body', body, sendBytes: 200 });
      expectGatewayError(res, 504, 'upstream_timeout');
      timings.stall_mid_body_ms = round(res.ms);
      expect(res.ms).to.be.lessThan(IDLE_MS + SLACK_MS);
      expect(record).to.include({ status: 504, error_code: 'upstream_timeout' });
    });
  });

  describe('faults inside a stream: the client gets what was sent, then the cut; the record is partial', () => {
    it('reset mid-stream: events so far arrive unchanged, the body ends in an error, partial record', async () => {
      const events = chatStreamEvents();
      const { res, record } = await against({ fault: 'reset-mid-stream', events, sendEvents: 4 }, streamBody());
      expect(res.status).to.equal(200);
      expect(res.bodyError, 'a cut stream must not look complete').to.be.instanceOf(Error);
      expect(res.body.equals(Buffer.concat(events.slice(0, 4)))).to.equal(true);
      expect(record).to.include({
        status: 200,
        streamed: true,
        provenance: 'partial',
        error_code: 'upstream_unreachable',
      });
      // Counted from what was streamed: the role event, "This", " is", " a"; the recording reports one token per
      // content event (12 events, completion_tokens 12).
      expect(record.output_tokens).to.equal(3);
    });

    it('stall between SSE events: cut after idle_ms, partial record with upstream_timeout', async () => {
      const events = chatStreamEvents();
      const { res, record } = await against({ fault: 'stall-mid-stream', events, sendEvents: 3 }, streamBody());
      expect(res.status).to.equal(200);
      expect(res.bodyError).to.be.instanceOf(Error);
      expect(res.body.equals(Buffer.concat(events.slice(0, 3)))).to.equal(true);
      timings.stall_mid_stream_ms = round(res.ms);
      expect(res.ms).to.be.lessThan(IDLE_MS + SLACK_MS);
      expect(record).to.include({ status: 200, provenance: 'partial', error_code: 'upstream_timeout' });
      await upstream.last().done;
      expect(upstream.last().aborted).to.equal(true);
    });
  });

  describe('provider errors pass through unchanged, and are recorded', () => {
    for (const [name, reply] of Object.entries(PROVIDER_ERRORS)) {
      for (const stream of [false, true]) {
        it(`${name} (${reply.status}, ${stream ? 'stream requested' : 'JSON'}): status, headers and bytes unchanged`, async () => {
          const { res, record } = await against(reply, stream ? streamBody() : chatBody());
          expect(res.status).to.equal(reply.status);
          expect(res.body.equals(reply.body), res.text).to.equal(true);
          for (const [h, v] of Object.entries(reply.headers)) expect(res.headers[h], h).to.equal(v);
          expect(record).to.include({
            status: reply.status,
            error_code: `upstream_${reply.status}`,
            provenance: 'failed',
            cost_pico: '0',
          });
        });
      }
    }

    it('529 from the messages provider with the Anthropic error body', async () => {
      const { res, record } = await against(
        PROVIDER_ERRORS.anthropic529,
        JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [], stream: true }),
        jsonHeaders(gw, { 'x-api-key': ANTHROPIC_KEY, authorization: '' }),
        '/v1/messages',
      );
      expect(res.status).to.equal(529);
      expect(res.text).to.equal(PROVIDER_ERRORS.anthropic529.body.toString());
      expect(record).to.include({ status: 529, error_code: 'upstream_529' });
    }).timeout(10_000);
  });

  describe('malformed and huge answers pass through byte for byte without hurting the gateway', () => {
    const malformed: Record<string, Buffer[]> = {
      'data lines that are not JSON': [
        Buffer.from('data: {not json\n\n'),
        Buffer.from('data: [1,2\n\n'),
        Buffer.from('data: [DONE]\n\n'),
      ],
      'no blank-line terminators at all': [
        Buffer.from('data: {"choices":[{"delta":{"content":"a"}}]}\ndata: {"x":1}\n'),
      ],
      'binary junk and NUL bytes': [
        Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 13, 10]),
        Buffer.from('data: \u0000\u0001\n\n'),
      ],
      'CR-only line ends and a BOM in the middle': [Buffer.from('\ufeffdata: {"a":1}\r\r\ufeffdata: x\r\r')],
      'a 2 MB line without a line break': [Buffer.from(`data: ${'x'.repeat(2 * 1024 * 1024)}`)],
      'an event split across every byte boundary': [
        ...Buffer.from('data: {"choices":[{"delta":{"content":"héllo"}}]}\n\n'),
      ].map((b) => Buffer.from([b])),
      'usage with wrong types': [
        Buffer.from('data: {"usage":{"prompt_tokens":"many","completion_tokens":-5,"total_tokens":null}}\n\n'),
      ],
      'an error event mid-stream': [
        Buffer.from('data: {"choices":[{"delta":{"content":"a"}}]}\n\n'),
        Buffer.from('event: error\ndata: {"error":{"message":"overloaded"}}\n\n'),
      ],
    };
    for (const [name, chunks] of Object.entries(malformed)) {
      it(`malformed SSE: ${name}`, async () => {
        const { res, record } = await against({ status: 200, headers: SSE_TYPE, body: chunks }, streamBody());
        expect(res.status).to.equal(200);
        expect(res.bodyError).to.equal(undefined);
        expect(res.body.equals(Buffer.concat(chunks))).to.equal(true);
        expect(record.status).to.equal(200);
        // An error event after the 200 means the answer did not complete: partial, with the error in the record.
        const failedMidStream = name === 'an error event mid-stream';
        expect(record.error_code).to.equal(failedMidStream ? 'upstream_stream_error' : null);
        // No usage in the stream, or usage in a form that cannot be a count (a string, a negative number, which
        // counts as not reported): counted by the tokenizer, 'estimated'.
        const expected = failedMidStream ? 'partial' : 'estimated';
        expect(record.provenance).to.equal(expected);
      });
    }

    it('a huge JSON body (24 MB) and a huge stream (24 MB, 12,000 events): unchanged, memory released', async () => {
      const before = await settledHeapMb();
      await (async () => {
        const json = Buffer.from(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            choices: [{ message: { role: 'assistant', content: 'y'.repeat(24 * 1024 * 1024) } }],
            usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
          }),
        );
        const { res, record } = await against({
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: json,
        });
        expect(res.status).to.equal(200);
        expect(res.body.equals(json)).to.equal(true);
        expect(record).to.include({ status: 200, output_tokens: 2 });
      })();
      await (async () => {
        const event = Buffer.from(`data: {"choices":[{"delta":{"content":"${'z'.repeat(2000)}"}}]}\n\n`);
        const events = Array.from({ length: 12_000 }, () => event);
        const started = performance.now();
        const { res, record } = await against({ status: 200, headers: SSE_TYPE, body: events }, streamBody());
        expect(res.body.length).to.equal(event.length * 12_000);
        expect(res.body.equals(Buffer.concat(events))).to.equal(true);
        expect(record.provenance).to.equal('estimated'); // no usage in the stream: counted (sampled) from 24 MB of text
        expect(performance.now() - started).to.be.lessThan(5000);
      })();
      clientTexts.splice(-2); // the huge bodies are not kept for the scan
      const after = await settledHeapMb();
      console.log(`      heap: ${round(before)} MB before, ${round(after)} MB after two 24 MB answers`);
      recordFigures('upstream-faults', 'huge-answers', {
        json_mb: 24,
        stream_mb: 24,
        heap_before_mb: round(before),
        heap_after_mb: round(after),
      });
      expect(after - before).to.be.lessThan(16);
    });
  });

  // Mocha runs a suite's own tests before its nested suites: these checks are a nested suite so they run last.
  describe('afterwards', () => {
    it('after every fault the gateway is up, idle and holds no stray upstream sockets', async () => {
      const ok = await call(gw, '/v1/chat/completions', { body: chatBody() });
      expect(ok.status).to.equal(200);
      expect(gw.gateway.proxy.inflight).to.equal(0);
      const open = await upstream.settleSockets(gw.gateway.pools.connectedSockets());
      expect(open).to.equal(gw.gateway.pools.connectedSockets());
      expect(open).to.be.at.most(2);
      recordFigures('upstream-faults', 'timeouts', {
        connect_ms: CONNECT_MS,
        first_byte_ms: FIRST_BYTE_MS,
        idle_ms: IDLE_MS,
        ...timings,
      });
    });

    it('leaked no planted secret into logs, records, admin answers or gateway errors', async () => {
      const scanned = await expectNoSecrets(
        gw,
        clientTexts.filter((t) => t.includes('"code"')),
      );
      expect(scanned.records).to.be.at.least(30);
    });
  });
});
