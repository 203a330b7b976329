#!/usr/bin/env node
// CPU per request with metrics on and off, A/B in one run: two gateway processes (bench/tollgate.bench.yaml, one
// with metrics.enabled false) in front of one mock provider, driven in alternating rounds of sequential-ish
// requests (a few in parallel), so that both see the same machine load. CPU is the process's user + system time
// from /proc, divided by the requests of the round. Prints the median of the rounds per side, and each round.
//   npm run bench:metrics -- [--rounds 10] [--requests 2000] [--parallel 8]
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const argv = process.argv.slice(2);
const value = (name, dflt) => Number(argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = value('--rounds', 10);
const REQUESTS = value('--requests', 2000);
const PARALLEL = value('--parallel', 8);
const KEY = 'tg_bench_metrics_ab_key_000000000000000000001';
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGTERM')));

function freePort() {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** Starts a process and resolves once a line of its output matches. */
function startUntil(args, env, ready) {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let started = false;
    const look = (d) => {
      if (started) return; // the request log lines that follow are read and dropped
      out += d;
      const m = ready.exec(out);
      if (m) {
        started = true;
        res({ child, match: m });
      }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => rej(new Error(`exited ${code}: ${out.slice(-500)}`)));
  });
}

/** User + system CPU seconds of a process so far. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

const mock = await startUntil([join(HERE, 'mock-upstream.mjs')], { MOCK_PORT: '0' }, /listening on (http:\/\/\S+)/);
const mockUrl = mock.match[1];

async function gateway(metrics) {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-ab-${metrics ? 'on' : 'off'}-`));
  const port = await freePort();
  const config = join(dir, 'gateway.config.yaml');
  copyFileSync(join(HERE, 'tollgate.bench.yaml'), config);
  writeFileSync(config, `${readFileSync(config, 'utf8')}\nmetrics: { enabled: ${metrics} }\n`);
  const env = { BENCH_PORT: String(port), BENCH_DATA: dir, MOCK_URL: mockUrl, GATEWAY_KEY: KEY };
  const { child } = await startUntil([join(ROOT, 'dist/cli/index.js'), 'start', '--config', config], env, /listening/);
  return {
    name: metrics ? 'metrics on' : 'metrics off',
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    perRequest: [],
  };
}

const on = await gateway(true);
const off = await gateway(false);
const dispatcher = new Agent({ connections: PARALLEL });
const body = readFileSync(join(HERE, 'bodies', 'chat.json'));
const headers = {
  'content-type': 'application/json',
  'x-gateway-key': KEY,
  authorization: 'Bearer sk-bench',
  'x-gateway-metadata': '{"agent":"bench","feature":"load-test"}',
  'x-gateway-metadata-customer-id': 'acme',
};

async function round(target, n) {
  let left = n;
  const before = cpuSeconds(target.pid);
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (left-- > 0) {
        const res = await request(`${target.url}/v1/chat/completions`, { method: 'POST', headers, body, dispatcher });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`${target.name}: ${res.statusCode}`);
      }
    }),
  );
  return ((cpuSeconds(target.pid) - before) / n) * 1e6;
}

await round(on, 500); // warm-up: JIT, connections
await round(off, 500);
for (let r = 0; r < ROUNDS; r++) {
  // Alternating which goes first, so a drift in machine load falls on both sides alike.
  const order = r % 2 === 0 ? [on, off] : [off, on];
  for (const t of order) t.perRequest.push(await round(t, REQUESTS));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const t of [on, off])
  console.log(
    `${t.name}: median ${median(t.perRequest).toFixed(1)} µs CPU per request; rounds ${t.perRequest.map((x) => x.toFixed(0)).join(' ')}`,
  );
// Each round's two sides ran back to back: their difference is less exposed to the machine's drift than the medians.
const paired = on.perRequest.map((x, i) => x - off.perRequest[i]);
const diff = median(paired);
console.log(
  `difference, median of the paired rounds: ${diff.toFixed(1)} µs per request (${((diff / median(off.perRequest)) * 100).toFixed(1)}%); pairs ${paired.map((x) => x.toFixed(0)).join(' ')}`,
);
process.exit(0);
