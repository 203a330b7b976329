#!/usr/bin/env node
// Stored gateway keys at scale: does anything on the proxy's thread grow with the number of keys?
//
// For each key count (default 0, 10,000 and 100,000) a fresh `tollgate start` (SQLite store, admin API on, the default
// pipeline) gets that many keys through POST /api/keys/bulk (1,000 a call, the bulk path), then:
//   - idle CPU: the process's CPU time (all threads) and the main thread's alone (the proxy's thread, which runs key
//     sync), over --idle seconds with no traffic, as a percentage of one core;
//   - proxied latency: bench/load.mjs, --connections closed-loop connections for --duration seconds after a warm-up,
//     every request with the last key created (looked up among all the others);
//   - the creation's own time (wall clock of the bulk calls), then 20 single creates (POST /api/keys) timed one by
//     one, and the RSS after it.
// One JSON line per key count on stdout, a table on stderr. The machine's load average is printed with each count:
// on a shared machine the latencies say as much about the neighbours as about the gateway.
//
//   npm run build && node bench/keys-scale.mjs [--counts 0,10000,100000] [--idle 10] [--duration 10] [--connections 2]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = join(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    counts: { type: 'string', default: '0,10000,100000' },
    idle: { type: 'string', default: '10' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '2' },
  },
});
const BULK = 1000;
/** Keys then created one at a time (POST /api/keys), each timed: the single create at that table size. */
const SINGLE_CREATES = 20;
const CLK_TCK = 100;
const log = (line) => process.stderr.write(`${line}\n`);

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** CPU time (ms) of a process (all its threads) or of one of its threads. */
function cpuMs(pid, tid) {
  const stat = readFileSync(tid ? `/proc/${pid}/task/${tid}/stat` : `/proc/${pid}/stat`, 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))[1]) / 1024;

/** Starts a process and resolves with it once `pattern` appears on its stderr (or stdout). */
function startProcess(file, argv, env, pattern) {
  const child = spawn(process.execPath, [file, ...argv], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let seen = '';
  return new Promise((resolve, reject) => {
    const look = (d) => {
      seen += d.toString();
      const m = pattern.exec(seen);
      if (m) resolve({ child, match: m });
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => reject(new Error(`${file} exited (${code}): ${seen.slice(-2000)}`)));
  });
}

async function admin(url, token, path, body) {
  const res = await fetch(`${url}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

function runLoad(url, key, seconds, connections) {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const argv = [join(ROOT, 'bench/load.mjs'), '--url', `${url}/v1/chat/completions`, '--body', body];
  argv.push(
    '-H',
    'content-type: application/json',
    '-H',
    `x-gateway-key: ${key}`,
    '-H',
    'authorization: Bearer sk-bench',
  );
  argv.push('--connections', String(connections), '--duration', String(seconds), '--warmup', '2');
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return new Promise((resolve) => child.once('exit', () => resolve(JSON.parse(out.trim().split('\n').pop()))));
}

async function measure(count, mockUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-keys-'));
  const token = `bench-admin-${randomBytes(16).toString('hex')}`;
  const yamlKey = `tg_bench_${randomBytes(16).toString('hex')}`;
  const [port, adminPort] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'gateway.config.yaml'),
    [
      `server: { host: 127.0.0.1, port: ${port} }`,
      `admin: { host: 127.0.0.1, port: ${adminPort}, token: '${token}' }`,
      `storage: { url: 'sqlite:${join(dir, 'tollgate.db')}' }`,
      `workspaces:`,
      `  - id: bench`,
      `    keys: [{ id: yaml, key: '${yamlKey}' }]`,
      `providers: { openai: { base_url: '${mockUrl}/v1' } }`,
    ].join('\n'),
  );
  const cli = join(ROOT, 'dist/cli/index.js');
  const { child, match } = await startProcess(
    cli,
    ['start', '--config', join(dir, 'gateway.config.yaml')],
    {},
    /listening on (http:\/\/\S+)/,
  );
  const url = match[1];
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const pid = child.pid;
  try {
    const created = Date.now();
    let key = yamlKey;
    for (let made = 0; made < count; made += BULK) {
      const n = Math.min(BULK, count - made);
      const keys = Array.from({ length: n }, (_, i) => ({ workspace: 'bench', label: `bench-${made + i}` }));
      const answer = await admin(adminUrl, token, '/api/keys/bulk', { keys });
      key = answer.data.at(-1).key;
    }
    const createSeconds = (Date.now() - created) / 1000;
    const singleMs = [];
    for (let i = 0; i < SINGLE_CREATES; i++) {
      const t0 = performance.now();
      await admin(adminUrl, token, '/api/keys', { workspace: 'bench', label: `single-${i}` });
      singleMs.push(performance.now() - t0);
    }
    singleMs.sort((a, b) => a - b);
    await sleep(3000); // the last sync, the touch of last-used times and the store's writes settle
    const idleSeconds = Number(args.idle);
    const [p0, t0] = [cpuMs(pid), cpuMs(pid, pid)];
    await sleep(idleSeconds * 1000);
    const [p1, t1] = [cpuMs(pid), cpuMs(pid, pid)];
    const load = await runLoad(url, key, Number(args.duration), Number(args.connections));
    const result = {
      keys: count,
      create_s: Math.round(createSeconds * 10) / 10,
      single_create_ms_median: Math.round(singleMs[SINGLE_CREATES / 2] * 10) / 10,
      single_create_ms_max: Math.round(singleMs.at(-1) * 10) / 10,
      rss_mb: Math.round(rssMb(pid)),
      idle_cpu_pct_process: Math.round(((p1 - p0) / (idleSeconds * 1000)) * 1000) / 10,
      idle_cpu_pct_main_thread: Math.round(((t1 - t0) / (idleSeconds * 1000)) * 1000) / 10,
      requests: load.requests,
      statuses: load.status,
      p50_ms: load.latency_ms?.p50,
      p99_ms: load.latency_ms?.p99,
      max_ms: load.latency_ms?.max,
      machine_cpu_pct: load.machine_cpu_pct,
      loadavg_1m: Math.round(loadavg()[0] * 10) / 10,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
    log(
      `${String(count).padStart(7)} keys: created in ${result.create_s} s (one more: ${result.single_create_ms_median} ms median), idle CPU ${result.idle_cpu_pct_process}% (main thread ${result.idle_cpu_pct_main_thread}%), p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, RSS ${result.rss_mb} MB, load average ${result.loadavg_1m}`,
    );
    return result;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    rmSync(dir, { recursive: true, force: true });
  }
}

const mock = await startProcess(
  join(ROOT, 'bench/mock-upstream.mjs'),
  [],
  { MOCK_PORT: '0' },
  /listening on (http:\/\/\S+)/,
);
const mockUrl = mock.match[1];
try {
  for (const count of args.counts.split(',').map(Number)) await measure(count, mockUrl);
} finally {
  mock.child.kill('SIGTERM');
}
