import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { Agent, request } from 'undici';
import type { TestGateway } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, PROVIDER_ERRORS, SSE_TYPE, type Action } from '../helpers/faulty-upstream';
import { recordFigures } from '../helpers/figures';
import {
  WRONG_GATEWAY_KEY,
  chatBody,
  expectNoSecrets,
  expectNoSecretsIn,
  jsonHeaders,
  round,
  runPool,
  settledHeapMb,
  startGateway,
  streamBody,
  waitForCount,
} from '../helpers/reliability';

/**
 * The soak: thousands of mixed requests (JSON, streams, client aborts before and during the answer, upstream
 * errors and resets, refused keys, bad bodies) through one gateway. Afterwards the heap is back near where it
 * started, nothing is in flight, and the store holds exactly one record per request.
 *
 * CI runs TOLLGATE_SOAK_REQUESTS (default 3000); `npm run soak` runs 50,000.
 */
const N = Number(process.env.TOLLGATE_SOAK_REQUESTS ?? 3000);
const CONCURRENCY = 16;
const WARM_UP = 300;

type Kind =
  | 'json'
  | 'stream'
  | 'abort-mid-stream'
  | 'abort-before-answer'
  | 'upstream-500'
  | 'upstream-429'
  | 'reset-mid-stream'
  | 'bad-key'
  | 'invalid-json';
/** The mix, per 20 requests. */
const MIX: Kind[] = [
  'json',
  'json',
  'json',
  'json',
  'json',
  'json',
  'json',
  'stream',
  'stream',
  'stream',
  'stream',
  'abort-mid-stream',
  'abort-mid-stream',
  'abort-before-answer',
  'upstream-500',
  'upstream-429',
  'reset-mid-stream',
  'bad-key',
  'invalid-json',
  'json',
];

describe(`reliability: soak (${N} mixed requests, ${CONCURRENCY} at a time)`, function () {
  this.timeout(Math.max(120_000, N * 40));
  const upstream = new FaultyUpstream();
  let gw: TestGateway;
  let agent: Agent;
  const events = chatStreamEvents();
  const outcomes = new Map<Kind, Map<string, number>>();

  before(async () => {
    await upstream.start();
    upstream.respondWith((req): Action | undefined => {
      switch (req.headers['x-soak-kind']) {
        case 'stream':
          return { status: 200, headers: SSE_TYPE, body: events, delayMs: 1 };
        case 'abort-mid-stream':
          return { status: 200, headers: SSE_TYPE, body: events, delayMs: 15 };
        case 'abort-before-answer':
          return { fault: 'stall-before-headers' };
        case 'upstream-500':
          return PROVIDER_ERRORS.openai500;
        case 'upstream-429':
          return PROVIDER_ERRORS.openai429;
        case 'reset-mid-stream':
          return { fault: 'reset-mid-stream', events, sendEvents: 3, delayMs: 1 };
        default:
          return undefined;
      }
    });
    gw = await startGateway(
      upstream.url,
      `
plugins:
  - use: auth
    options: { lockout: { max_failures: 1000000 } }
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options: { flush_interval_ms: 50 }
`,
    );
    agent = new Agent({ connections: CONCURRENCY * 2, keepAliveTimeout: 30_000 });
  });
  after(async () => {
    await agent?.close();
    await gw?.stop();
    await upstream.stop();
  });

  let seq = 0;
  async function one(kind: Kind, suite: string): Promise<void> {
    const trace = `${suite}-${seq++}`;
    const headers = jsonHeaders(gw, { 'x-soak-kind': kind, 'x-trace': trace, 'x-gateway-metadata-suite': suite });
    if (kind === 'bad-key') headers['x-gateway-key'] = WRONG_GATEWAY_KEY;
    const body =
      kind === 'invalid-json' ? '{"model": "gpt-4o-mini", ' : kind.includes('stream') ? streamBody() : chatBody();
    const ac = new AbortController();
    let outcome: string;
    try {
      if (kind === 'abort-before-answer') {
        void upstream
          .waitFor((r) => r.headers['x-trace'] === trace)
          .then(
            () => ac.abort(),
            () => ac.abort(),
          );
      }
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body,
        signal: ac.signal,
        dispatcher: agent,
      });
      if (kind === 'abort-mid-stream') {
        const it = res.body[Symbol.asyncIterator]();
        await it.next();
        ac.abort();
        outcome = 'aborted mid-stream';
        await it.return?.().catch(() => undefined);
      } else {
        try {
          await res.body.arrayBuffer();
          outcome = String(res.statusCode);
        } catch {
          outcome = `${res.statusCode} cut`;
        }
      }
    } catch (err) {
      outcome = ac.signal.aborted ? 'aborted before the answer' : `error ${(err as Error).message}`;
    }
    const byKind = outcomes.get(kind) ?? new Map<string, number>();
    byKind.set(outcome, (byKind.get(outcome) ?? 0) + 1);
    outcomes.set(kind, byKind);
  }

  it('heap back near its baseline, nothing in flight, one record per request', async () => {
    await runPool(WARM_UP, CONCURRENCY, (i) => one(MIX[i % MIX.length], 'warm-up'));
    await waitForCount(gw, WARM_UP, 20_000);
    outcomes.clear();
    const baseline = await settledHeapMb();
    const samples: number[] = [];
    const started = performance.now();
    let logLines = 0;
    await runPool(N, CONCURRENCY, async (i) => {
      await one(MIX[i % MIX.length], 'soak');
      if (i % 500 === 0) {
        // What the test harness itself keeps (captured log lines, the upstream's request list) is scanned and
        // dropped as it goes, so the heap figures are the gateway's.
        expectNoSecretsIn(gw.logs, 'log line');
        logLines += gw.logs.length;
        gw.logs.length = 0;
        upstream.received.length = 0;
        samples.push(process.memoryUsage().heapUsed / 2 ** 20);
      }
    });
    const seconds = (performance.now() - started) / 1000;

    const deadline = Date.now() + 10_000;
    while (gw.gateway.proxy.inflight > 0 && Date.now() < deadline) await sleep(20);
    // Counted over all records: a refused key is recorded before attribution runs, so it carries no suite tag.
    const stored = (await waitForCount(gw, WARM_UP + N, 60_000)) - WARM_UP;
    const after = await settledHeapMb();

    console.log(`      ${N} requests in ${round(seconds)} s (${Math.round(N / seconds)}/s); records stored ${stored}`);
    console.log(
      `      heap: baseline ${round(baseline)} MB, peak sampled ${round(Math.max(...samples))} MB, after ${round(after)} MB (+${round(after - baseline)} MB)`,
    );
    console.log(
      `      gateway upstream sockets ${gw.gateway.pools.connectedSockets()}, upstream open sockets ${upstream.openSockets}, in flight ${gw.gateway.proxy.inflight}`,
    );
    console.log(`      ${logLines + gw.logs.length} log lines scanned for secrets during the run`);
    for (const [kind, m] of outcomes)
      console.log(`        ${kind.padEnd(20)} ${[...m].map(([o, n]) => `${o}: ${n}`).join(', ')}`);
    recordFigures('soak', N > 3000 ? 'long' : 'ci', {
      requests: N,
      concurrency: CONCURRENCY,
      seconds: round(seconds),
      per_s: Math.round(N / seconds),
      stored,
      heap_baseline_mb: round(baseline),
      heap_peak_sampled_mb: round(Math.max(...samples)),
      heap_after_mb: round(after),
      upstream_sockets: gw.gateway.pools.connectedSockets(),
      in_flight: gw.gateway.proxy.inflight,
      log_lines_scanned: logLines + gw.logs.length,
    });

    expect(gw.gateway.proxy.inflight).to.equal(0);
    expect(stored, 'record count == request count').to.equal(N);
    expect(after - baseline, 'heap growth (MB)').to.be.lessThan(15);
    expect(gw.gateway.pools.connectedSockets()).to.be.at.most(CONCURRENCY * 2);
    // Each kind got the answer it should.
    const only = (kind: Kind, outcome: string) =>
      expect(
        [...(outcomes.get(kind) ?? [])].map(([o]) => o),
        kind,
      ).to.deep.equal([outcome]);
    only('json', '200');
    only('stream', '200');
    only('upstream-500', '500');
    only('upstream-429', '429');
    only('bad-key', '401');
    only('invalid-json', '400');
    only('abort-mid-stream', 'aborted mid-stream');
    only('abort-before-answer', 'aborted before the answer');
    only('reset-mid-stream', '200 cut');
  });

  describe('afterwards', () => {
    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });
});
