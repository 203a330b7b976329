/**
 * Retention benchmark: how long deleting BENCH_OLD old records takes, and what proxied requests see meanwhile.
 *
 *   npm run build && node dist/bench/retention.js                          SQLite
 *   DATABASE_URL=postgres://... node dist/bench/retention.js              SQLite, then PostgreSQL twice: old records
 *                                                                          in the DEFAULT partition (every row deleted in
 *                                                                          batches), then in month partitions (dropped)
 *   BENCH_OLD=100000 BENCH_KEPT=20000                                      records before / after the cut-off
 *   BENCH_BATCH=2000 BENCH_PAUSE_MS=100                                    storage.retention.batch_size / pause_ms
 *
 * For each store: a fresh database is filled through UsageStore.insertBatch (old records 40 to 90 days back, kept
 * ones in the last 25 days) and UsageStore.maintain deletes the old ones without pauses, timed, with this thread's
 * event-loop delay watched. Then a fresh database again, and the gateway (a child process, started as `npm start` starts it) then serves one
 * client sending chat completions one after the other to a loopback mock provider (bench/mock-upstream.mjs):
 *   during    storage.retention.records_days: 30, requests from the moment the gateway listens until its
 *             "storage maintenance" log line (the run at start) appears
 *   baseline  then a new gateway process without retention, on the database the run left, the same number of
 *             requests (both phases start cold, so both pay the same warm-up)
 * Latency percentiles of both, and the run's own figures from its log line. Not part of npm test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { request } from 'undici';
import type { UsageRecord } from '../records/usage-record';
import { RETENTION_DEFAULTS } from '../config/schema';
import { openStore } from '../storage';
import { monthStart } from '../storage/postgres-partitions';

const ROOT = resolve(__dirname, '..', '..');
const OLD = Number(process.env.BENCH_OLD ?? 100_000);
const KEPT = Number(process.env.BENCH_KEPT ?? 20_000);
const BATCH = process.env.BENCH_BATCH;
const PAUSE_MS = process.env.BENCH_PAUSE_MS;
const PG_URL = process.env.DATABASE_URL;
const KEY = 'tg_bench_retention_key_000000000000000001';
const DAY = 86_400_000;
const NODE_FLAGS = ['--max-semi-space-size=8', '--v8-pool-size=1', '--expose-gc'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

function records(prefix: string, n: number, from: number, to: number): UsageRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    ts: from + Math.floor(((to - from) * i) / n),
    workspaceId: 'bench',
    keyId: 'bench',
    provider: 'openai',
    model: i % 3 ? 'gpt-4o-mini' : 'gpt-4o',
    servedModel: i % 3 ? 'gpt-4o-mini' : 'gpt-4o',
    endpoint: 'chat.completions',
    status: 200,
    streamed: i % 2 === 0,
    inputTokens: 500 + (i % 1000),
    outputTokens: 100 + (i % 300),
    cacheReadTokens: null,
    cacheWriteTokens: null,
    cacheWrite1hTokens: null,
    reasoningTokens: null,
    citationTokens: null,
    searchQueries: null,
    searchContextSize: null,
    costPico: BigInt(1_000_000 + i),
    provenance: 'measured',
    priceVersion: 'bench',
    latencyMs: 300,
    ttfbMs: 100,
    tags: { agent: `agent-${i % 12}`, customer_id: `cust-${i % 500}` },
    errorCode: null,
  }));
}

interface Target {
  name: string;
  storageYaml: string;
  open: () => ReturnType<typeof openStore>;
  /** PostgreSQL: prepare the month partitions of the last months first (as a long-running gateway would have). */
  partitions?: boolean;
  cleanup: () => Promise<void>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const f = (v: number) => v.toFixed(2);
  return `n=${s.length} p50=${f(percentile(s, 50))} p90=${f(percentile(s, 90))} p99=${f(percentile(s, 99))} max=${f(s[s.length - 1])} ms`;
}

async function startGateway(dir: string, storageYaml: string, retention: boolean, mockUrl: string) {
  const port = await freePort();
  const retentionYaml = retention
    ? `\n  retention: { records_days: 30${BATCH ? `, batch_size: ${BATCH}` : ''}${PAUSE_MS ? `, pause_ms: ${PAUSE_MS}` : ''} }`
    : '';
  const config = join(dir, `gateway-${port}.yaml`);
  writeFileSync(
    config,
    `server: { host: 127.0.0.1, port: ${port} }
logging: { level: info }
storage:
  ${storageYaml}${retentionYaml}
workspaces:
  - id: bench
    keys: [{ id: bench, key: "${KEY}" }]
providers:
  openai: { base_url: "${mockUrl}/v1" }
plugins:
  - use: usage-recorder
    options: { spill_path: ${join(dir, `spill-${port}.jsonl`)} }
`,
  );
  const child = spawn(
    process.execPath,
    [...NODE_FLAGS, join(ROOT, 'dist', 'cli', 'index.js'), 'start', '--config', config],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.on('data', () => undefined);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      await request(`${url}/v1/models`, { headers: { 'x-gateway-key': KEY } }).then((r) => r.body.dump());
      return { child, lines, url };
    } catch {
      await sleep(50);
    }
  }
  child.kill('SIGKILL');
  throw new Error(`gateway did not start:\n${lines.join('\n')}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function chat(url: string): Promise<number> {
  const t = performance.now();
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'x-gateway-key': KEY, authorization: 'Bearer sk-bench-not-a-key', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  return performance.now() - t;
}

/** A fresh store with OLD records 40 to 90 days back and KEPT in the last 25 days, left open. */
async function filled(target: Target, now: number) {
  const today = now - (now % DAY);
  const store = await target.open();
  if (target.partitions) for (let m = -4; m <= 0; m++) await store.maintain({ now: monthStart(now, m) });
  const fill = performance.now();
  const all = [
    ...records('old', OLD, today - 90 * DAY, today - 40 * DAY),
    ...records('kept', KEPT, today - 25 * DAY, now - 3_600_000),
  ];
  for (let i = 0; i < all.length; i += 5000) await store.insertBatch(all.slice(i, i + 5000));
  console.log(
    `${target.name}: filled ${OLD} old + ${KEPT} kept records in ${((performance.now() - fill) / 1000).toFixed(1)} s`,
  );
  return store;
}

/**
 * The store's own run, without pauses (pure deletion time), and how late this thread's timers ran meanwhile: on SQLite
 * the batches run on the writer thread, so this thread (the proxy's, in a gateway) should see no more delay than idle.
 */
async function storeRun(target: Target): Promise<void> {
  const now = Date.now();
  const store = await filled(target, now);
  const idle = monitorEventLoopDelay({ resolution: 1 });
  let elu = performance.eventLoopUtilization();
  idle.enable();
  await sleep(2000);
  idle.disable();
  const idleElu = performance.eventLoopUtilization(elu);
  const busy = monitorEventLoopDelay({ resolution: 1 });
  elu = performance.eventLoopUtilization();
  busy.enable();
  const t = performance.now();
  const result = await store.maintain({
    now,
    retention: {
      before: now - (now % DAY) - 30 * DAY,
      batchSize: Number(BATCH ?? RETENTION_DEFAULTS.batchSize),
      pauseMs: 0,
    },
  });
  const ms = performance.now() - t;
  busy.disable();
  const busyElu = performance.eventLoopUtilization(elu);
  await store.close();
  // Delay: how late a 1 ms timer fired (the machine's other work delays it too); utilization: the share of the time
  // this thread spent running callbacks rather than waiting for events.
  const lag = (h: ReturnType<typeof monitorEventLoopDelay>, u: { utilization: number }) =>
    `delay p99 ${(h.percentile(99) / 1e6).toFixed(1)} max ${(h.max / 1e6).toFixed(1)} ms, busy ${(u.utilization * 100).toFixed(1)}%`;
  console.log(
    `${target.name}: store run without pauses ${ms.toFixed(0)} ms: deleted ${result.deleted} in ${result.deleteStatements} statements, dropped ${JSON.stringify(result.droppedPartitions)}`,
  );
  console.log(`${target.name}: this thread idle: ${lag(idle, idleElu)}; during the run: ${lag(busy, busyElu)}`);
  await target.cleanup();
}

async function measure(target: Target, mockUrl: string): Promise<void> {
  await storeRun(target);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-retention-'));
  try {
    await (await filled(target, Date.now())).close();

    // Both phases start with a fresh gateway process (the run is at start): their first requests pay the same warm-up.
    const gw = await startGateway(dir, target.storageYaml, true, mockUrl);
    const during: number[] = [];
    const done = () => gw.lines.find((l) => l.includes('"msg":"storage maintenance'));
    while (!done()) during.push(await chat(gw.url));
    const line = JSON.parse(done()!);
    await stop(gw.child);

    // The same number of requests on a gateway without retention, on the database the run left.
    const base = await startGateway(dir, target.storageYaml, false, mockUrl);
    const baseline: number[] = [];
    for (let i = 0; i < during.length; i++) baseline.push(await chat(base.url));
    await stop(base.child);

    console.log(
      `${target.name}: maintenance run ${line.ms} ms: deleted ${line.deleted} in ${line.deleteStatements} statements, dropped ${JSON.stringify(line.droppedPartitions)}${line.msg.includes('failed') ? ` FAILED ${JSON.stringify(line.err)}` : ''}`,
    );
    console.log(`${target.name}: baseline (retention off)  ${summary(baseline)}`);
    console.log(`${target.name}: during the run           ${summary(during)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await target.cleanup();
  }
}

async function main(): Promise<void> {
  const mockPort = await freePort();
  const mock = spawn(process.execPath, [join(ROOT, 'bench', 'mock-upstream.mjs')], {
    env: { ...process.env, MOCK_PORT: String(mockPort) },
    stdio: 'ignore',
  });
  const mockUrl = `http://127.0.0.1:${mockPort}`;
  await sleep(500);
  const targets: Target[] = [];
  const sqliteDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-retention-db-'));
  const sqliteUrl = `sqlite:${join(sqliteDir, 'tollgate.db')}`;
  targets.push({
    name: 'SQLite',
    storageYaml: `url: "${sqliteUrl}"`,
    open: () => openStore(sqliteUrl),
    cleanup: async () => rmSync(sqliteDir, { recursive: true, force: true }),
  });
  if (PG_URL) {
    for (const partitions of [false, true]) {
      const schema = `bench_retention_${process.pid}_${partitions ? 'months' : 'default'}`;
      targets.push({
        name: `PostgreSQL (${partitions ? 'old records in month partitions' : 'old records in the DEFAULT partition'})`,
        storageYaml: `url: "${PG_URL}"\n  schema: ${schema}`,
        open: () => openStore(PG_URL, { schema }),
        partitions,
        cleanup: async () => {
          const c = new Client({ connectionString: PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await c.end();
        },
      });
    }
  }
  try {
    for (const t of targets) await measure(t, mockUrl);
  } finally {
    mock.kill('SIGTERM');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
