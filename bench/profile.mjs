#!/usr/bin/env node
// CPU profile of Tollgate under load (node --cpu-prof), summarised as the hottest functions and the share of
// each module, so an optimisation starts from a measurement. The .cpuprofile file can also be opened in
// Chrome DevTools (Performance tab) or speedscope for a flame graph.
//   node bench/profile.mjs [--scenario chat|stream|slow] [-c 32] [-d 10] [--no-recorder | --plain] [--redis URL] [--top 40] [--keep DIR]
// --plain profiles governance off (bench/tollgate.plain.yaml), to set beside the governed profile.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const argv = process.argv.slice(2);
const value = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const scenario = value('--scenario', 'chat');
const connections = Number(value('-c', scenario === 'chat' ? 32 : 8));
const duration = Number(value('-d', 10));
const top = Number(value('--top', 40));
const dir = resolve(value('--keep', mkdtempSync(join(tmpdir(), 'tollgate-prof-'))));
mkdirSync(dir, { recursive: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KEY = 'tg_profile_key_000000000000000000000000000001';
const started = [];

function freePort() {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}
async function waitTcp(port) {
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise((r) => {
      const c = connect({ host: '127.0.0.1', port }, () => {
        c.destroy();
        r(true);
      });
      c.on('error', () => r(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on ${port}`);
}
function start(name, args, env) {
  const fd = openSync(join(dir, `${name}.log`), 'a');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  started.push(child);
  return child;
}

const mockPort = await freePort();
const gwPort = await freePort();
start('mock', [join(HERE, 'mock-upstream.mjs')], { MOCK_PORT: String(mockPort) });
let yaml = readFileSync(join(HERE, argv.includes('--plain') ? 'tollgate.plain.yaml' : 'tollgate.bench.yaml'), 'utf8');
if (argv.includes('--no-recorder')) yaml = yaml.replace(/\n {2}- use: usage-recorder\n( {4}.*\n)*/, '\n');
// Limits in Redis, as the bench's tollgate-redis target runs them (its own key prefix).
const redisUrl = value('--redis', undefined);
if (redisUrl) yaml += `\nlimit_store:\n  redis_url: ${redisUrl}\n  key_prefix: "tollgate-profile-${process.pid}:"\n`;
writeFileSync(join(dir, 'gateway.config.yaml'), yaml);
const gw = start(
  'tollgate',
  [
    '--cpu-prof',
    '--cpu-prof-dir',
    dir,
    join(ROOT, 'dist', 'cli', 'index.js'),
    'start',
    '--config',
    join(dir, 'gateway.config.yaml'),
  ],
  {
    BENCH_PORT: String(gwPort),
    BENCH_DATA: dir,
    MOCK_URL: `http://127.0.0.1:${mockPort}`,
    GATEWAY_KEY: KEY,
  },
);
await waitTcp(mockPort);
await waitTcp(gwPort);

let body = join(HERE, 'bodies', scenario === 'chat' ? 'chat.json' : 'chat_stream.json');
if (scenario === 'slow') {
  const b = JSON.parse(readFileSync(body, 'utf8'));
  b.model += '-slow20';
  body = join(dir, 'slow.json');
  writeFileSync(body, JSON.stringify(b));
}
const load = spawn(
  process.execPath,
  [
    join(HERE, 'load.mjs'),
    '--url',
    `http://127.0.0.1:${gwPort}/v1/chat/completions`,
    '--body-file',
    body,
    '--mode',
    scenario === 'chat' ? 'plain' : 'stream',
    '-c',
    String(connections),
    '-d',
    String(duration),
    '--warmup',
    '2',
    '--watch',
    `gw=${gw.pid}`,
    '-H',
    `X-Gateway-Key: ${KEY}`,
    '-H',
    'Authorization: Bearer sk-mock',
    '-H',
    'X-Gateway-Metadata: {"agent":"bench","feature":"profile"}',
    '-H',
    'X-Gateway-Metadata-Customer-Id: acme',
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let out = '';
load.stdout.on('data', (d) => {
  out += d;
});
await new Promise((r) => load.on('exit', r));
const r = JSON.parse(out);
console.log(
  `${scenario}, ${connections} connections: ${r.rps} req/s, p50 ${r.latency_ms.p50} ms, p99 ${r.latency_ms.p99} ms, gateway ${r.procs.gw.cpu_pct}% CPU, ${r.procs.gw.cpu_us_per_req} µs/request`,
);

process.kill(-gw.pid, 'SIGTERM');
await new Promise((r) => gw.on('exit', r));
for (const c of started)
  try {
    process.kill(-c.pid, 'SIGTERM');
  } catch {
    /* gone */
  }
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no .cpuprofile written');
const prof = JSON.parse(readFileSync(join(dir, file), 'utf8'));

// Self time per node = samples landing on it; aggregate by function (name + file + line) and by module.
// Only samples from the first request on count (start-up, module loading and config parsing are left out), and
// idle samples are left out: percentages are shares of the busy CPU time under load.
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inRequest = (id) => {
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const cf = byId.get(x).callFrame;
    if (cf.functionName === 'handle' && cf.url.endsWith('core/proxy.js')) return true;
  }
  return false;
};
const first = prof.samples.findIndex(inRequest);
const counts = new Map();
let total = 0;
for (const s of prof.samples.slice(Math.max(0, first))) {
  if (byId.get(s).callFrame.functionName === '(idle)') continue;
  counts.set(s, (counts.get(s) ?? 0) + 1);
  total++;
}
const fn = new Map();
const mod = new Map();
const where = (url) => {
  if (!url) return '(native/V8)';
  const p = url.replace(/^file:\/\//, '');
  const nm = p.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = p.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (p.startsWith('node:')) return p;
  return relative(ROOT, p).replace(/^dist\//, '');
};
for (const [id, n] of counts) {
  const node = byId.get(id);
  const cf = node.callFrame;
  const m = where(cf.url);
  const name = cf.functionName || '(anonymous)';
  const key = `${name}  ${m}:${cf.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + n);
  const mk = cf.url
    ? m.replace(/\/[^/]*$/, (x) => (m.startsWith('node:') || !m.includes('/') ? x : '')) || m
    : name.startsWith('(')
      ? name
      : '(native/V8)';
  mod.set(mk, (mod.get(mk) ?? 0) + n);
}
const pct = (n) => ((n / total) * 100).toFixed(1).padStart(5) + '%';
console.log(`\nself time by module (${total} busy samples from the first request on):`);
for (const [k, n] of [...mod].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(n)}  ${k}`);
console.log(`\nhottest functions (self time):`);
for (const [k, n] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(n)}  ${k}`);
// Inclusive time (self + callees) of the gateway's own functions: where a request's CPU goes, phase by phase.
const incl = new Map();
for (const [id, n] of counts) {
  const seen = new Set();
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const cf = byId.get(x).callFrame;
    const m = where(cf.url);
    if (!/^(core|plugins|storage|pricing|providers)\//.test(m)) continue;
    const key = `${cf.functionName || '(anonymous)'}  ${m}:${cf.lineNumber + 1}`;
    if (seen.has(key)) continue;
    seen.add(key);
    incl.set(key, (incl.get(key) ?? 0) + n);
  }
}
console.log(`\ngateway functions, inclusive time:`);
for (const [k, n] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(n)}  ${k}`);

// The same samples by layer: each plugin and observer with everything it calls; the rest by the code it stopped in.
const PLUGIN = /^plugins\/([^/]+)\//;
function layerOf(id) {
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const m = where(byId.get(x).callFrame.url);
    const plugin = PLUGIN.exec(m);
    if (plugin) return `plugin ${plugin[1]}`;
    if (/^runtime\/observability\/(tracing|otel-tracer)|^@opentelemetry/.test(m)) return 'tracing';
    if (/^runtime\/observability\/|^prom-client$/.test(m)) return 'metrics';
    if (m === 'runtime/spend-guard.js') return 'spend guard';
    if (/^(pino|sonic-boom)$|^runtime\/(logger|log-destination)\.js$/.test(m)) return 'request log (pino, its writes)';
  }
  const cf = byId.get(id).callFrame;
  const m = where(cf.url);
  const name = cf.functionName;
  if (name === '(garbage collector)') return 'garbage collection';
  if ((name === 'parse' && m === 'core/response-body.js') || name === 'parseJsonBody')
    return 'JSON parse (request, answer)';
  if (m === 'undici' || m.startsWith('wasm:') || /JSToWasm|wasm-to-js/.test(name)) return 'undici (upstream HTTP)';
  if (/^(koa|on-finished|ee-first|delegates)$|^runtime\/proxy-app\.js$/.test(m)) return 'Koa (routing in)';
  if (
    /^node:(_http|net|events|internal\/(streams|stream_base_commons|http))/.test(m) ||
    name === 'writev' ||
    name === 'writeBuffer'
  )
    return "Node's HTTP, sockets and streams";
  if (/^(core|intake|runtime|services|contracts|providers|pricing|records|storage|plugin-kit|api)\//.test(m))
    return "Tollgate's own code";
  if (m === 'better-sqlite3' || name === 'postMessage') return 'storage (records handed to the writer thread)';
  return 'other (V8, microtasks, timers, libraries)';
}
const layers = new Map();
for (const [id, n] of counts) {
  const l = layerOf(id);
  layers.set(l, (layers.get(l) ?? 0) + n);
}
console.log(`\nby layer, proxy thread (each plugin and observer with what it calls):`);
for (const [k, n] of [...layers].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(n)}  ${k}`);
console.log(`\nprofile: ${join(dir, file)}`);
