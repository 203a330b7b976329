import { connect } from 'node:net';
import { sleep } from '../helpers/wait';
import { expect } from 'chai';
import { request } from 'undici';
import { OPENAI_KEY, type TestGateway } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, SSE_TYPE } from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  allRecords,
  chatBody,
  expectNoSecrets,
  jsonHeaders,
  runPool,
  startGateway,
  streamBody,
  waitForCount,
} from '../helpers/reliability';

/**
 * The client goes away before, during and after the upstream answer. Each time the upstream request is aborted
 * (not left running), nothing leaks (in-flight count, gateway pool sockets, upstream sockets), and the request
 * is recorded with what was delivered.
 */
describe('reliability: client disconnects', function () {
  this.timeout(60_000);
  const upstream = new FaultyUpstream();
  let gw: TestGateway;
  let seq = 0;

  before(async () => {
    await upstream.start();
    gw = await startGateway(upstream.url);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  /** Headers that tag the request (X-Gateway-Metadata-*: stored in the record) and mark it upstream. */
  const tagged = (trace: string, suite = 'single') =>
    jsonHeaders(gw, { 'x-gateway-metadata-trace': trace, 'x-gateway-metadata-suite': suite, 'x-trace': trace });
  const sawTrace = (trace: string) => (r: { headers: Record<string, unknown> }) => r.headers['x-trace'] === trace;

  async function recordOf(trace: string): Promise<any> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const found = (await allRecords(gw)).find((r) => r.tags.trace === trace);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no usage record tagged trace=${trace}`);
      await sleep(25);
    }
  }

  // ---- the four moments, each as a function so the repetition test can mix them

  /** Before any answer: the upstream is still thinking when the client gives up. */
  async function abortBeforeAnswer(trace: string, suite?: string): Promise<void> {
    const ac = new AbortController();
    const pending = request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: tagged(trace, suite),
      body: chatBody(),
      signal: ac.signal,
    }).catch(() => undefined);
    const seen = await upstream.waitFor(sawTrace(trace));
    ac.abort();
    await pending;
    await Promise.race([seen.done, sleep(3000)]);
    expect(seen.aborted, 'the upstream request was left running').to.equal(true);
  }

  /** While the client is still uploading its body: nothing may go upstream. */
  async function abortDuringUpload(trace: string, suite = 'single'): Promise<void> {
    const { hostname, port } = new URL(gw.url);
    const socket = connect(Number(port), hostname);
    await new Promise((r) => socket.once('connect', r));
    const body = chatBody();
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Gateway-Key: ${gw.key}\r\n` +
        `Authorization: Bearer ${OPENAI_KEY}\r\nX-Gateway-Metadata-Trace: ${trace}\r\nX-Gateway-Metadata-Suite: ${suite}\r\n` +
        `Content-Length: ${body.length + 1000}\r\n\r\n${body}`,
    );
    await sleep(20);
    socket.destroy();
  }

  /** Mid-stream: a few events arrived, then the client closes. */
  async function abortMidStream(trace: string, suite?: string): Promise<void> {
    const ac = new AbortController();
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: tagged(trace, suite),
      body: streamBody(),
      signal: ac.signal,
    });
    const it = res.body[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    ac.abort();
    const seen = await upstream.waitFor(sawTrace(trace));
    await Promise.race([seen.done, sleep(3000)]);
    expect(seen.aborted, 'the upstream stream was left running').to.equal(true);
  }

  /** After the upstream answered in full, while the gateway sends it: a large body the client stops reading. */
  async function abortBeforeReading(trace: string, suite = 'single'): Promise<void> {
    const { hostname, port } = new URL(gw.url);
    const socket = connect(Number(port), hostname);
    // The gateway reads a JSON answer whole before it answers: the first bytes mean it is sending the 16 MB.
    const started = new Promise((resolve) => socket.once('data', () => resolve(socket.pause())));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Gateway-Key: ${gw.key}\r\n` +
        `Authorization: Bearer ${OPENAI_KEY}\r\nX-Gateway-Metadata-Trace: ${trace}\r\nX-Gateway-Metadata-Suite: ${suite}\r\nX-Trace: ${trace}\r\n` +
        `Content-Length: ${Buffer.byteLength(chatBody())}\r\n\r\n${chatBody()}`,
    );
    await started;
    socket.destroy();
    const seen = await upstream.waitFor(sawTrace(trace));
    expect(seen.aborted, 'the upstream had finished its answer').to.equal(false);
  }

  /** After the whole answer: the client closes a finished exchange. */
  async function closeAfterAnswer(trace: string, suite?: string): Promise<void> {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: tagged(trace, suite),
      body: chatBody(),
    });
    await res.body.text();
  }

  const HUGE = Buffer.from(
    JSON.stringify({
      id: 'big',
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'w'.repeat(16 * 1024 * 1024) } }],
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    }),
  );
  const events = chatStreamEvents();

  beforeEach(() => {
    upstream.reset();
    upstream.respondWith((req, body) => {
      if (req.headers['x-trace']?.toString().startsWith('before-')) return { fault: 'stall-before-headers' };
      if (req.headers['x-trace']?.toString().startsWith('unread-'))
        return { status: 200, headers: { 'content-type': 'application/json' }, body: HUGE };
      // The single mid-stream test: events far apart, so that exactly the two the client read were sent when it left.
      if (req.headers['x-trace']?.toString().startsWith('stream-'))
        return { status: 200, headers: SSE_TYPE, body: events, delayMs: 1000 };
      if (body?.stream) return { status: 200, headers: SSE_TYPE, body: events, delayMs: 40 };
      return undefined;
    });
  });

  it('before the answer: the upstream request is aborted; recorded as request_aborted (499)', async () => {
    const trace = `before-${seq++}`;
    await abortBeforeAnswer(trace);
    expect(await recordOf(trace)).to.include({
      status: 499,
      error_code: 'request_aborted',
      provenance: 'failed',
      provider: 'openai',
      cost_pico: '0',
    });
  });

  it('during the upload: nothing goes upstream; recorded as request_aborted', async () => {
    const trace = `upload-${seq++}`;
    await abortDuringUpload(trace);
    const record = await recordOf(trace);
    expect(record).to.include({ status: 499, error_code: 'request_aborted', provider: null });
    expect(upstream.received).to.have.length(0);
  });

  it('mid-stream: the upstream stream is aborted; a partial record counts what was streamed', async () => {
    const trace = `stream-${seq++}`;
    await abortMidStream(trace);
    const record = await recordOf(trace);
    expect(record).to.include({ status: 200, streamed: true, provenance: 'partial', error_code: 'request_aborted' });
    // The client read the role event and "This". The recorded stream says one token per content event: 12 events
    // ("This", " is", ... "?"), usage.completion_tokens 12. So what was streamed is 1 token.
    expect(record.output_tokens).to.equal(1);
  });

  it('after the upstream answered, before the client read it: a partial record', async () => {
    const trace = `unread-${seq++}`;
    await abortBeforeReading(trace);
    const record = await recordOf(trace);
    expect(record).to.include({ status: 200, provenance: 'partial', error_code: 'request_aborted' });
  });

  it('after the whole answer: a complete record', async () => {
    const trace = `after-${seq++}`;
    await closeAfterAnswer(trace);
    const record = await recordOf(trace);
    expect(record).to.include({ status: 200, provenance: 'measured', error_code: null });
  });

  it('300 mixed disconnects, 12 at a time: no leaked slot or socket, one record each', async () => {
    const before = { sockets: gw.gateway.pools.connectedSockets() };
    const kinds = [abortBeforeAnswer, abortDuringUpload, abortMidStream, closeAfterAnswer, abortBeforeReading];
    const N = 300;
    const started = performance.now();
    await runPool(N, 12, async (i) => {
      const kind = kinds[i % kinds.length];
      const prefix = kind === abortBeforeAnswer ? 'before' : kind === abortBeforeReading ? 'unread' : 'rep';
      await kind(`${prefix}-${seq++}`, 'repeat');
    });
    const ms = performance.now() - started;

    const deadline = Date.now() + 5000;
    while (gw.gateway.proxy.inflight > 0 && Date.now() < deadline) await sleep(20);
    expect(gw.gateway.proxy.inflight, 'requests still in flight').to.equal(0);
    expect(
      upstream.received.every((r) => r.aborted || r.done),
      'upstream exchanges still open',
    ).to.equal(true);

    const pool = gw.gateway.pools.connectedSockets();
    const open = await upstream.settleSockets(pool);
    console.log(
      `      ${N} disconnects in ${Math.round(ms)} ms; gateway pool sockets ${before.sockets} -> ${pool}; upstream open sockets ${open}; upstream connections made ${upstream.connections}`,
    );
    recordFigures('client-disconnects', 'repeat', {
      disconnects: N,
      concurrency: 12,
      ms: Math.round(ms),
      pool_sockets: pool,
      upstream_open_sockets: open,
      in_flight: gw.gateway.proxy.inflight,
    });
    // Bounded by the concurrency (plus the odd socket a just-aborted exchange left for the pool to close), not by N.
    expect(pool, 'gateway upstream sockets').to.be.at.most(12 + 4);
    expect(open, 'sockets open at the upstream').to.equal(pool);

    const stored = await waitForCount(gw, N, 10_000, '?filter[suite]=repeat');
    recordFigures('client-disconnects', 'records', { disconnects: N, stored });
    expect(stored, 'one record per request').to.equal(N);
  });

  describe('afterwards', () => {
    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });
});
