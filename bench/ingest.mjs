#!/usr/bin/env node
// Ingest into one PostgreSQL: records per second landed in the store from N gateway processes, and the store's
// own write rate with no gateway (N processes calling UsageStore.insertBatch).
//
//   npm run bench:ingest -- [--url postgres://postgres@127.0.0.1:5432/tollgate_ingest] [--processes 1,2,4]
//                           [--seconds 20] [--warmup 5] [--connections 16] [--batch 500] [--only gateways|store]
//
// Gateways: each its own port, all sharing one database (created afresh for each N, dropped at the end), with the
// usage recorder on (batches of --batch, the default 500) and the mock provider (bench/mock-upstream.mjs) on
// loopback; a closed loop of --connections requests per gateway, from this process. Store: N child processes
// writing batches of --batch records of the big-store mix (bench/scale/record.ts) as fast as the store takes them.
// Records are counted in the store (SELECT count(*)) at the start and end of the measured window, not requests
// answered; CPU per record from /proc: the gateways (or writers) and the PostgreSQL backends connected to the
// database (the server's shared WAL writer and checkpointer are left out: other databases use them too). Queue
// depth and spill bytes are read from each gateway's /metrics every second. Needs a build (dist/).
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool, request } from 'undici';
import { HEADERS, bodyOf, cpuSeconds, freePort, startGateway, startMock } from './lib/gateway-process.mjs';
import { machineCpu } from './lib/proc.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/tollgate_ingest' },
    processes: { type: 'string', default: '1,2,4' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
    batch: { type: 'string', default: '500' },
    only: { type: 'string' },
    writer: { type: 'string' },
    'keep-tmp': { type: 'boolean' }, // bench/lib/gateway-process.mjs: keep the gateways' data folders
  },
});
const SECONDS = Number(args.seconds);
const WARMUP = Number(args.warmup);
const BATCH = Number(args.batch);
const ADMIN_TOKEN = 'bench-ingest-admin-token-000000000000';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (line) => process.stderr.write(`${line}\n`);
const dbName = new URL(args.url).pathname.slice(1);

/** Runs `fn` with a client on the server's postgres database (to create and drop the bench's). */
async function onServer(fn) {
  const u = new URL(args.url);
  u.pathname = '/postgres';
  const c = new pg.Client({ connectionString: u.href });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const freshDatabase = () =>
  onServer(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${dbName}`);
  });

/** Records in the store, and the CPU seconds so far of every backend connected to the database but ours. */
async function storeSample(c) {
  const { rows } = await c.query(
    `SELECT (SELECT count(*) FROM usage_records)::int AS records,
            array(SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()) AS pids`,
  );
  const cpu = new Map();
  for (const pid of rows[0].pids) {
    try {
      cpu.set(pid, cpuSeconds(pid));
    } catch {
      /* ended */
    }
  }
  return { records: rows[0].records, cpu, at: performance.now(), machine: machineCpu() };
}

/** Backend CPU between two samples: a backend that started in between counts from zero. */
const backendCpu = (a, b) => [...b.cpu].reduce((s, [pid, t]) => s + t - (a.cpu.get(pid) ?? 0), 0);

/** The gateway's usage queue, read from its /metrics. */
async function queueOf(adminPort) {
  const res = await request(`http://127.0.0.1:${adminPort}/metrics`);
  const text = await res.body.text();
  const gauge = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { depth: gauge('tollgate_store_queue_depth'), spill: gauge('tollgate_store_spill_bytes') };
}

function gatewayYaml(adminPort) {
  return `server:
  host: 127.0.0.1
  port: \${BENCH_PORT}
logging: { level: warn }
storage: { url: '${args.url}' }
metrics: { enabled: true, auth: none }
admin: { host: 127.0.0.1, port: ${adminPort}, token: '${ADMIN_TOKEN}' }
workspaces:
  - id: bench
    keys:
      - { id: bench, key: '\${GATEWAY_KEY}' }
providers:
  openai:
    base_url: '\${MOCK_URL}/v1'
plugins:
  - use: auth
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options:
      batch_size: ${BATCH}
      spill_path: '\${BENCH_DATA}/usage-spill.jsonl'
`;
}

/** Closed loop: `connections` requests at a time to each gateway until `until()` says stop. */
function drive(gateways, connections, until) {
  const body = bodyOf('chat');
  const counts = { ok: 0, failed: 0 };
  const pools = gateways.map((g) => new Pool(new URL(g.url).origin, { connections }));
  const loop = async (pool) => {
    while (!until()) {
      try {
        const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: HEADERS, body });
        await res.body.dump();
        counts[res.statusCode === 200 ? 'ok' : 'failed']++;
      } catch {
        counts.failed++;
      }
    }
  };
  const done = Promise.all(pools.flatMap((p) => Array.from({ length: connections }, () => loop(p)))).then(() =>
    Promise.all(pools.map((p) => p.close())),
  );
  return { counts, done };
}

/** What the window between samples a and b saw, per record landed. */
function figures(a, b, processCpu) {
  const landed = b.records - a.records;
  const s = (b.at - a.at) / 1000;
  const perRecord = (cpu) => (landed > 0 ? (cpu * 1000) / landed : NaN);
  const busy = b.machine.busy_ms - a.machine.busy_ms;
  const total = busy + b.machine.idle_ms - a.machine.idle_ms;
  return {
    records_per_s: Math.round(landed / s),
    process_cpu_ms_per_record: perRecord(processCpu),
    postgres_cpu_ms_per_record: perRecord(backendCpu(a, b)),
    machine_busy: busy / total,
    load: loadavg()[0],
  };
}

/** Seconds until every gateway's queue and spill file are empty (at most 60). */
async function drain(gateways) {
  const t = performance.now();
  while (performance.now() - t < 60_000) {
    const queues = await Promise.all(gateways.map((g) => queueOf(g.adminPort)));
    if (queues.every((q) => q.depth === 0 && q.spill === 0)) break;
    await sleep(200);
  }
  return (performance.now() - t) / 1000;
}

async function gatewayRun(n, mockUrl) {
  await freshDatabase();
  const gateways = [];
  // One at a time: the first migrates the new database.
  for (let i = 0; i < n; i++) {
    const adminPort = await freePort();
    gateways.push({ ...(await startGateway(mockUrl, { yaml: gatewayYaml(adminPort) })), adminPort });
  }
  const c = new pg.Client({ connectionString: args.url });
  await c.connect();
  let stop = false;
  const load = drive(gateways, Number(args.connections), () => stop);
  const queue = { depth: 0, spill: 0 };
  const watch = setInterval(async () => {
    for (const g of gateways) {
      const q = await queueOf(g.adminPort).catch(() => ({ depth: NaN, spill: NaN }));
      queue.depth = Math.max(queue.depth, q.depth);
      queue.spill = Math.max(queue.spill, q.spill);
    }
  }, 1000);
  await sleep(WARMUP * 1000);
  const cpuOf = () => gateways.reduce((s, g) => s + cpuSeconds(g.pid), 0);
  const [a, cpu0, answered0] = [await storeSample(c), cpuOf(), load.counts.ok];
  await sleep(SECONDS * 1000);
  const [b, cpu1, answered1] = [await storeSample(c), cpuOf(), load.counts.ok];
  stop = true;
  await load.done;
  clearInterval(watch);
  const drained = await drain(gateways);
  const stored = (await c.query('SELECT count(*)::int AS n FROM usage_records')).rows[0].n;
  const answeredPerS = Math.round((answered1 - answered0) / ((b.at - a.at) / 1000));
  const result = {
    setup: `${n} gateway${n > 1 ? 's' : ''}`,
    ...figures(a, b, cpu1 - cpu0),
    answered_per_s: answeredPerS,
  };
  Object.assign(result, { max_queue_depth: queue.depth, max_spill_bytes: queue.spill, failed: load.counts.failed });
  // Every answered request's record is in the store once the queues are empty.
  Object.assign(result, { drained_s: drained, missing: load.counts.ok - stored });
  for (const g of gateways) process.kill(g.pid, 'SIGTERM');
  await sleep(1000);
  for (const g of gateways) rmSync(g.dir, { recursive: true, force: true });
  await c.end();
  return result;
}

/** N writer processes (this script with --writer) calling insertBatch until killed. */
async function storeRun(n) {
  await freshDatabase();
  const writers = [];
  for (let i = 0; i < n; i++) {
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), '--writer', `w${i}`, '--url', args.url, '--batch', String(BATCH)],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    writers.push(child);
    if (i === 0) await sleep(2000); // the first migrates the new database
  }
  const c = new pg.Client({ connectionString: args.url });
  await c.connect();
  await sleep(WARMUP * 1000);
  const cpuOf = () => writers.reduce((s, w) => s + cpuSeconds(w.pid), 0);
  const [a, cpu0] = [await storeSample(c), cpuOf()];
  await sleep(SECONDS * 1000);
  const [b, cpu1] = [await storeSample(c), cpuOf()];
  for (const w of writers) w.kill('SIGKILL');
  await c.end();
  return { setup: `insertBatch × ${n}`, ...figures(a, b, cpu1 - cpu0) };
}

/** A writer process: batches of the big-store mix, stamped now, ids unique to this writer, written in a loop. */
async function writer(prefix) {
  const { openStore } = await import(join(ROOT, 'dist/storage/index.js'));
  const { scaleRecord } = await import(join(ROOT, 'dist/bench/scale/record.js'));
  const { rng } = await import(join(ROOT, 'dist/cli/demo-traffic.js'));
  await import('reflect-metadata');
  const store = await openStore(args.url);
  const r = rng(prefix.length + Number(prefix.slice(1)) * 7919);
  for (let g = 0; ;) {
    const batch = [];
    for (let k = 0; k < BATCH; k++, g++) {
      const rec = scaleRecord(r, g, Date.now());
      rec.id = `${prefix}-${g}`;
      batch.push(rec);
    }
    await store.insertBatch(batch);
  }
}

const fmt = (x, d = 0) =>
  Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–';

function table(rows) {
  const head =
    '| setup | records/s landed | requests/s answered | process CPU ms/record | PostgreSQL CPU ms/record | max queue depth | max spill bytes | drained after (s) | missing | machine busy | load |';
  const lines = rows.map(
    (r) =>
      `| ${r.setup} | ${fmt(r.records_per_s)} | ${fmt(r.answered_per_s)} | ${fmt(r.process_cpu_ms_per_record, 3)} | ${fmt(r.postgres_cpu_ms_per_record, 3)} | ${fmt(r.max_queue_depth)} | ${fmt(r.max_spill_bytes)} | ${fmt(r.drained_s, 1)} | ${fmt(r.missing)} | ${fmt(100 * r.machine_busy)}% | ${fmt(r.load, 1)} |`,
  );
  return [head, `|${'---|'.repeat(11)}`, ...lines].join('\n');
}

async function main() {
  const counts = args.processes.split(',').map(Number);
  const rows = [];
  if (args.only !== 'store') {
    const mockUrl = await startMock();
    for (const n of counts) {
      log(`${n} gateway(s): ${WARMUP} s warm-up, ${SECONDS} s measured`);
      rows.push(await gatewayRun(n, mockUrl));
    }
  }
  if (args.only !== 'gateways')
    for (const n of counts) {
      log(`insertBatch from ${n} process(es): ${WARMUP} s warm-up, ${SECONDS} s measured`);
      rows.push(await storeRun(n));
    }
  await onServer((c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
  process.stdout.write(
    `${table(rows)}\n\n${JSON.stringify({ batch: BATCH, connections: Number(args.connections), seconds: SECONDS, rows })}\n`,
  );
  process.exit(0);
}

if (args.writer) writer(args.writer).catch((err) => (log(String(err?.stack ?? err)), process.exit(1)));
else main().catch((err) => (log(String(err?.stack ?? err)), process.exit(1)));
