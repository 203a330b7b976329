import { spawn, type ChildProcess } from 'node:child_process';
import { sleep } from '../helpers/wait';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { Agent, request } from 'undici';
import { openStore } from '../../storage';
import { fixtureBytes, PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, SSE_TYPE } from '../helpers/faulty-upstream';
import { chatBody, expectNoSecretsIn, storedIds, streamBody } from '../helpers/reliability';
import { registerGateway } from '../helpers/secret-scan';
import { recordFigures } from '../helpers/figures';

interface Started {
  child: ChildProcess;
  url: string;
  dir: string;
  exited: Promise<number | null>;
  stderr: () => string;
  /** Everything the process wrote (its log lines and messages). */
  output: () => string;
}

/** The real `tollgate start` process on a fresh SQLite store. */
async function startProcess(upstreamUrl: string, recorder: string): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-signals-'));
  writeFileSync(
    join(dir, 'gateway.config.yaml'),
    `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: 10000 }
logging: { level: info }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstreamUrl)}
plugins:
  - use: usage-recorder
    options: ${recorder}
`,
  );
  const child = spawn(
    process.execPath,
    [resolve(PROJECT_ROOT, 'dist/cli/index.js'), 'start', '--config', join(dir, 'gateway.config.yaml')],
    {
      env: { ...process.env, GATEWAY_KEY: TEST_GATEWAY_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) resolveUrl(m[1]);
    });
    void exited.then((code) => reject(new Error(`gateway exited early (${code}): ${stderr}`)));
  });
  // Registered for the suite-wide secret scan (its output and data folder; it has no admin listener).
  registerGateway({ kind: 'process', logs: () => (stdout + stderr).split('\n'), dataDir: dir });
  return { child, url, dir, exited, stderr: () => stderr, output: () => stdout + stderr };
}

/** When the process began to drain (epoch ms of its "shutting down" log line). */
function drainStartedAt(gw: Started): number {
  const line = gw
    .output()
    .split('\n')
    .find((l) => l.includes('shutting down: finishing in-flight requests'));
  expect(line, 'the shutdown log line').to.not.equal(undefined);
  return JSON.parse(line!).time as number;
}

interface Result {
  kind: 'json' | 'stream';
  /** Set when a response (status line) arrived. */
  status?: number;
  /** x-gateway-request-id of the answer (the id of its usage record). */
  id?: string;
  /** The whole expected body arrived. */
  complete: boolean;
  error?: string;
  /** Epoch ms: request sent, response headers received, body ended (or failed). */
  sentAt: number;
  headersAt?: number;
  endAt?: number;
}

const JSON_BODY = fixtureBytes('openai/chat_completion_cached_tokens.json');
const EVENTS = chatStreamEvents();
const STREAM_BYTES = Buffer.concat(EVENTS);

/** Keeps `concurrency` requests going (60% JSON, 40% streams) until stop() and the gateway stops answering. */
function keepLoading(url: string, concurrency: number) {
  const results: Result[] = [];
  let stopping = false;
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  const headers = {
    'content-type': 'application/json',
    'x-gateway-key': TEST_GATEWAY_KEY,
    authorization: `Bearer ${OPENAI_KEY}`,
  };
  let i = 0;
  const worker = async () => {
    for (;;) {
      const stream = i++ % 5 < 2;
      const r: Result = { kind: stream ? 'stream' : 'json', complete: false, sentAt: Date.now() };
      try {
        const res = await request(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers,
          body: stream ? streamBody() : chatBody(),
          dispatcher: agent,
        });
        r.headersAt = Date.now();
        r.status = res.statusCode;
        r.id = res.headers['x-gateway-request-id'] as string | undefined;
        const body = Buffer.from(await res.body.arrayBuffer());
        r.complete = body.equals(stream ? STREAM_BYTES : JSON_BODY);
      } catch (err) {
        r.error = (err as Error).message;
      }
      r.endAt = Date.now();
      results.push(r);
      if (stopping && r.status === undefined) return; // the gateway stopped answering
    }
  };
  const done = Promise.all(Array.from({ length: concurrency }, worker));
  return {
    results,
    stop: () => (stopping = true),
    finished: async () => {
      await done;
      await agent.close().catch(() => undefined);
    },
  };
}

async function storedCount(dir: string): Promise<number> {
  const store = await openStore(`sqlite:${join(dir, 'tollgate.db')}`);
  try {
    const [total] = await store.queryUsage({ from: 0, to: Date.now() + 60_000, groupBy: [] });
    return total?.requests ?? 0;
  } finally {
    await store.close();
  }
}

/** The ids of every record in the process's store. */
async function idsAtRest(dir: string): Promise<Set<string>> {
  const store = await openStore(`sqlite:${join(dir, 'tollgate.db')}`);
  try {
    return await storedIds(store);
  } finally {
    await store.close();
  }
}

const spillLines = (dir: string) => {
  const path = join(dir, 'data/usage-spill.jsonl');
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
};

/** The process's output and every file it left (database, WAL, spill file) hold none of the planted secrets. */
function expectNoSecretsAtRest(gw: Started): void {
  const files = readdirSync(gw.dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'));
  expectNoSecretsIn([gw.output()], 'process output line');
  expectNoSecretsIn(files, 'file in the data folder');
}

/** SIGTERM mid-load loses nothing; SIGKILL loses at most what waited for the next flush, and we measure it. */
describe('reliability: signals under load (the real tollgate process)', function () {
  this.timeout(60_000);
  const upstream = new FaultyUpstream();

  before(async () => {
    await upstream.start();
    upstream.respondWith((_req, body) =>
      body?.stream ? { status: 200, headers: SSE_TYPE, body: EVENTS, delayMs: 8 } : undefined,
    );
  });
  after(() => upstream.stop());

  it('SIGTERM mid-load: in-flight requests and streams finish, every answered request is stored, exit 0', async () => {
    // Records wait in memory (flush every 60 s, batches of 10,000): only the shutdown flush can store them.
    const gw = await startProcess(
      upstream.url,
      '{ flush_interval_ms: 60000, batch_size: 10000, max_in_memory: 20000 }',
    );
    const load = keepLoading(gw.url, 16);
    await sleep(1500);
    gw.child.kill('SIGTERM');
    load.stop();
    const code = await gw.exited;
    await load.finished();
    // In flight when the drain began (the process's own log line): the answer had started (headers in) and ended after.
    const drainAt = drainStartedAt(gw);
    const straddling = load.results.filter(
      (r) => r.headersAt !== undefined && r.headersAt < drainAt && r.endAt! > drainAt,
    );

    // A request arriving on an open connection during the drain is refused (503 shutting_down, not forwarded).
    const refusedWhileDraining = load.results.filter((r) => r.status === 503);
    const answered = load.results.filter((r) => r.status !== undefined && r.status !== 503);
    const cut = answered.filter((r) => !r.complete);
    const stored = await storedCount(gw.dir);
    const spilled = spillLines(gw.dir);
    console.log(
      `      ${answered.length} answered (${answered.filter((r) => r.kind === 'stream').length} streams), ${cut.length} cut, ` +
        `${refusedWhileDraining.length} refused with 503 while draining, ${load.results.length - answered.length - refusedWhileDraining.length} refused after the listener closed; ` +
        `${straddling.length} answers (${straddling.filter((r) => r.kind === 'stream').length} streams) begun before the drain and finished during it; ` +
        `${stored} stored + ${spilled} in the spill file; exit ${code}`,
    );
    recordFigures('process-signals', 'sigterm', {
      answered: answered.length,
      streams: answered.filter((r) => r.kind === 'stream').length,
      cut: cut.length,
      refused_503: refusedWhileDraining.length,
      in_flight_at_signal: straddling.length,
      in_flight_streams_at_signal: straddling.filter((r) => r.kind === 'stream').length,
      stored,
      spilled,
      exit_code: code,
    });
    expect(code, gw.stderr()).to.equal(0);
    expect(straddling.length, 'answers in flight when the drain began (16 clients, streams of ~130 ms)').to.be.at.least(
      1,
    );
    expect(
      straddling.filter((r) => !r.complete || r.status !== 200),
      'answers in flight at the signal that did not finish',
    ).to.deep.equal([]);
    expect(cut, 'answers cut by the shutdown').to.deep.equal([]);
    expect(answered.every((r) => r.status === 200)).to.equal(true);
    expect(stored + spilled, 'records of answered requests').to.equal(answered.length);
    expect(spilled, 'the store was up: nothing needed the spill file').to.equal(0);
    expectNoSecretsAtRest(gw);
  });

  it('SIGKILL mid-load: the records lost are bounded by what waited for the next write (matched by request id)', async () => {
    const BATCH = 100;
    const FLUSH_MS = 200;
    const gw = await startProcess(upstream.url, `{ flush_interval_ms: ${FLUSH_MS}, batch_size: ${BATCH} }`);
    const load = keepLoading(gw.url, 16);
    const started = Date.now();
    await sleep(2000);
    gw.child.kill('SIGKILL');
    const killedAt = Date.now();
    load.stop();
    await gw.exited;
    await load.finished();

    const complete = load.results.filter((r) => r.complete);
    const rate = complete.length / ((killedAt - started) / 1000);
    const ids = await idsAtRest(gw.dir);
    // Matched by request id: a complete answer whose record is not in the store was lost.
    expect(
      complete.every((r) => typeof r.id === 'string'),
      'every answer names its request id',
    ).to.equal(true);
    const lost = complete.filter((r) => !ids.has(r.id!));
    const cutByKill = load.results.filter((r) => r.status !== undefined && !r.complete);
    // What waited in memory for the next write (a full batch is written at once, the rest every flush interval),
    // plus one batch that may be inside its insert transaction when the process dies.
    const bound = Math.ceil(Math.max(BATCH, (rate * FLUSH_MS) / 1000)) + BATCH;
    console.log(
      `      ${complete.length} complete answers (${Math.round(rate)}/s), ${ids.size} records stored: ${lost.length} complete answers without a record ` +
        `(bound: max(batch_size ${BATCH}, rate x flush_interval ${FLUSH_MS} ms) + one batch being written = ${bound}); ${cutByKill.length} answers cut by the kill`,
    );
    recordFigures('process-signals', 'sigkill', {
      complete: complete.length,
      rate_per_s: Math.round(rate),
      stored: ids.size,
      lost: lost.length,
      bound,
      batch_size: BATCH,
      flush_interval_ms: FLUSH_MS,
      cut_by_kill: cutByKill.length,
    });
    expect(lost.length, 'complete answers whose record was lost').to.be.at.most(bound);
    // Nothing invented: every stored record belongs to a request that got an answer (complete or cut by the kill).
    const answeredIds = new Set(load.results.filter((r) => r.id).map((r) => r.id!));
    expect(
      [...ids].filter((id) => !answeredIds.has(id)),
      'records of requests no client saw',
    ).to.deep.equal([]);
    expectNoSecretsAtRest(gw);
  });
});
