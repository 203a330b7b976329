#!/usr/bin/env node
// Tollgate's benchmark (npm run bench). One run measures, side by side and against the same mock provider:
//   direct          the mock itself (no hop)
//   bare            bench/bare-proxy.mjs: node:http + undici's request() piped back, no features (the usual few dozen lines)
//   bare-dispatch   bench/bare-dispatch.mjs: node:http + undici's dispatch() (no stream objects), no features: the
//                   fastest Node hop we know, so the floor Tollgate is also compared with
//   tollgate        the built gateway (dist/) with every shipped plugin on: auth, header-strip, attribution
//                   (tags sent on every request), usage-recorder writing to SQLite; info-level request logs
//   tollgate-plain  governance off (bench/tollgate.plain.yaml): only the gateway key check and header strip, which are
//                   always on; no limits, budget, recording or metrics
//   tollgate-norec  the same without the usage recorder (only in chat_c32: the recorder's cost)
//   tollgate-nometrics  the same with metrics.enabled: false (only in chat_c32: the Prometheus metrics' cost)
//   tollgate-traced the same with OpenTelemetry tracing on, one request in ten sampled, spans sent over OTLP/HTTP to
//                   the mock (only in chat_c32: the cost of tracing)
//   tollgate-redis  the same with its limits in Redis (only in chat_c32, when a Redis answers on 127.0.0.1:6379)
//   tollgate-x<N>   the same with server.workers = N and, when Redis answers, limits shared through it (chat_c32:
//                   multi-core scaling, compared with tollgate-redis, else with tollgate)
//   portkey         @portkey-ai/gateway 1.15.2, when it is installed or can be installed into bench/peers/portkey
//
// Scenarios: chat_c1, chat_c32 (non-streamed chat), stream_c8 (SSE, 20 content chunks), slow_stream_c8
// (20 ms between chunks), sustained_20ms (a 20 ms provider at growing connection counts: the highest rate with p99
// under 1 s and under 0.1% errors), upload_c1 (20 MiB multipart transcription upload, its model field first: streamed
// through), upload_spooled_c1 (the same with its file first: received whole, then sent), soak (60 s of mixed load on
// tollgate, for memory), admin_contention (chat at 2 connections while the heaviest dashboard query loops on a
// seeded store: bench/admin-contention.mjs). Everything binds and connects to 127.0.0.1 only, every step is bounded
// in time, and only the process groups started here are stopped.
//
// usage: node bench/run.mjs [--quick] [--no-portkey] [--targets a,b] [--scenarios a,b] [--duration S]
//                           [--warmup S] [--soak S] [--workers N] [--compare FILE] [--out DIR]
//                           [--admin-records N] [--admin-rounds N]
//   --scenarios admin_contention alone starts only the mock and that scenario's gateway.
//        node bench/run.mjs --ab SPEC_A --ab SPEC_B [--scenarios a,b] [--pairs N]
//   --ab: two Tollgate variants (Node flags, config values, another build: bench/lib/ab.mjs) loaded in strict
//   alternation, scenario by scenario (default chat_c32,stream_c8), compared by CPU per request and peak RSS.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  openSync,
  closeSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { groupStat, machineCpu } from './lib/proc.mjs';
import { medianInterval, renderReport } from './lib/report.mjs';
import { adminContention } from './admin-contention.mjs';
import { sustainedRates, waitBody } from './lib/sustained.mjs';
import { applySettings, describeVariant, pairUp, parseVariant, renderAB, summariseAB } from './lib/ab.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const started = Date.now();

// ------------------------------------------------------------------ options
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
if (flag('--help') || flag('-h')) {
  console.log(
    readFileSync(fileURLToPath(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 31)
      .join('\n'),
  );
  process.exit(0);
}
const QUICK = flag('--quick');
const DURATION = Number(value('--duration', QUICK ? 1 : 8));
const WARMUP = Number(value('--warmup', QUICK ? 0.3 : 3));
const SOAK = Number(value('--soak', QUICK ? 3 : 60));
const WORKERS = Number(value('--workers', Math.min(2, cpus().length)));
const MAX_SECONDS = Number(value('--max-seconds', QUICK ? 150 : 900));
/** Other jobs on the machine distort every figure: wait (at most this long in all) for it to be quiet before a case. */
let quietBudgetMs = Number(value('--quiet-wait', QUICK ? 3 : 30)) * 1000;
const OUT_DIR = resolve(value('--out', join(HERE, 'results')));
const ALL_SCENARIOS = [
  'chat_c1',
  'chat_c32',
  'stream_c8',
  'slow_stream_c8',
  'sustained_20ms',
  'soak',
  'upload_c1',
  'upload_spooled_c1',
  'admin_contention',
];
const AB_SPECS = argv.flatMap((a, i) => (a === '--ab' && i + 1 < argv.length ? [argv[i + 1]] : []));
if (AB_SPECS.length && AB_SPECS.length !== 2) badUsage('--ab is given twice: the variant A, then the variant B');
const AB_PAIRS = Number(value('--pairs', QUICK ? 3 : 9));
const SCENARIOS = value('--scenarios', AB_SPECS.length ? 'chat_c32,stream_c8' : ALL_SCENARIOS.join(','))
  .split(',')
  .filter(Boolean);
for (const s of SCENARIOS)
  if (!ALL_SCENARIOS.includes(s)) badUsage(`unknown scenario ${s} (known: ${ALL_SCENARIOS.join(', ')})`);
if (AB_SPECS.length && SCENARIOS.includes('soak'))
  badUsage('--ab compares CPU per request and peak RSS under load: the soak has no place in it');
const CLUSTER = `tollgate-x${WORKERS}`;
const ALL_TARGETS = [
  'direct',
  'bare',
  'bare-dispatch',
  'tollgate',
  'tollgate-plain',
  'tollgate-norec',
  'tollgate-nometrics',
  'tollgate-traced',
  ...(WORKERS > 1 ? ['tollgate-redis', CLUSTER] : []),
  'portkey',
];
const ADMIN_ONLY = SCENARIOS.length > 0 && SCENARIOS.every((s) => s === 'admin_contention');
let TARGETS = value('--targets', ADMIN_ONLY ? '' : ALL_TARGETS.join(','))
  .split(',')
  .filter(Boolean);
if (flag('--no-portkey')) TARGETS = TARGETS.filter((t) => t !== 'portkey');
const UPLOAD_BYTES = 20 * 1024 * 1024;
/** The traced target's sampler ratio. */
const TRACE_RATIO = 0.1;
const SLOW_CHUNK_MS = 20;

const GATEWAY_KEY = 'tg_bench_' + randomBytes(16).toString('hex');
const TAG_HEADERS = [
  'X-Gateway-Metadata: {"agent":"bench","feature":"load-test"}',
  'X-Gateway-Metadata-Customer-Id: acme',
];

function log(msg) {
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${msg}\n`);
}
/** A wrong option: nothing was started yet. */
function badUsage(msg) {
  log(`ERROR: ${msg}`);
  process.exit(2);
}
function die(msg) {
  log(`ERROR: ${msg}`);
  shutdown(1);
}

// ------------------------------------------------------------------ processes (each in its own group)
const groups = new Map(); // name -> { pgid, child, log }
const tmp = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));

function startGroup(name, cmd, args, env = {}) {
  const logFile = join(tmp, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  groups.set(name, { pgid: child.pid, child, logFile });
  child.on('exit', (code, sig) => {
    const g = groups.get(name);
    if (g && !g.stopping) log(`${name} exited early (code ${code}, signal ${sig}); see ${logFile}`);
    if (g) g.exited = true;
  });
  return groups.get(name);
}

async function stopGroup(name) {
  const g = groups.get(name);
  if (!g || g.exited) return;
  g.stopping = true;
  try {
    process.kill(-g.pgid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 50 && !g.exited; i++) await sleep(100);
  if (!g.exited)
    try {
      process.kill(-g.pgid, 'SIGKILL');
    } catch {
      /* gone */
    }
}

let shuttingDown = false;
async function shutdown(code) {
  if (shuttingDown) return;
  shuttingDown = true;
  await Promise.all([...groups.keys()].map(stopGroup));
  if (!flag('--keep-tmp')) rmSync(tmp, { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => {
  log('interrupted');
  shutdown(130);
});
process.on('SIGTERM', () => shutdown(143));
setTimeout(() => {
  log(`--max-seconds ${MAX_SECONDS} reached, aborting`);
  shutdown(124);
}, MAX_SECONDS * 1000).unref();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
  });
}

async function waitHttp(url, seconds, init) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url, { ...init, signal: AbortSignal.timeout(1000) });
      await r.arrayBuffer();
      return true;
    } catch {
      await sleep(100);
    }
  }
  return false;
}

async function waitTcp(port, seconds, g) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline && !g?.exited) {
    const ok = await new Promise((r) => {
      const c = connect({ host: '127.0.0.1', port }, () => {
        c.destroy();
        r(true);
      });
      c.on('error', () => r(false));
    });
    if (ok) return true;
    await sleep(100);
  }
  return false;
}

/** Every listening TCP socket of a process group started here must be on loopback. */
function checkLoopback() {
  const r = spawnSync('ss', ['-ltnpH'], { encoding: 'utf8' });
  if (r.status !== 0) return log('note: `ss` is not available, the loopback check of listeners is skipped');
  const ours = new Set([...groups.values()].map((g) => g.pgid));
  for (const line of r.stdout.split('\n')) {
    const addr = line.trim().split(/\s+/)[3];
    for (const m of line.matchAll(/pid=(\d+)/g)) {
      let pgrp;
      try {
        pgrp = Number(readFileSync(`/proc/${m[1]}/stat`, 'latin1').split(') ')[1].split(' ')[2]);
      } catch {
        continue;
      }
      if (ours.has(pgrp) && !/^(127\.|\[::1\]|::1)/.test(addr)) die(`pid ${m[1]} listens on ${addr}, not loopback`);
    }
  }
}

/** Resets a group's peak RSS (VmHWM), so the next reading is the peak of the next scenario only. */
function resetPeak(pgid) {
  for (const pid of groupStat(pgid).pids) {
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      /* not permitted: peak stays since start */
    }
  }
}

const mib = (kb) => Math.round(kb / 102.4) / 10;

/** CPU used by the whole machine over `ms`, in % of one core. */
async function machineBusyPct(ms) {
  const a = machineCpu();
  await sleep(ms);
  const b = machineCpu();
  return ((b.busy_ms - a.busy_ms) / ms) * 100;
}

/** Waits until the machine is idle (our servers are idle between cases), within the run's waiting budget. */
async function waitQuiet() {
  let busy = await machineBusyPct(QUICK ? 200 : 400);
  if (busy < 25) return busy;
  log(
    `machine busy: ${busy.toFixed(0)}% of a core used by other processes; waiting (budget ${(quietBudgetMs / 1000).toFixed(0)} s left)`,
  );
  while (busy >= 25 && quietBudgetMs > 0) {
    const t = Date.now();
    busy = await machineBusyPct(1000);
    quietBudgetMs -= Date.now() - t;
  }
  if (busy >= 25) log(`still busy (${busy.toFixed(0)}% of a core); measuring anyway, see the "other CPU" column`);
  return busy;
}

// ------------------------------------------------------------------ targets
const PORTKEY_DIR = join(HERE, 'peers', 'portkey');
const PORTKEY_JS = join(PORTKEY_DIR, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');

function ensurePortkey() {
  if (existsSync(PORTKEY_JS)) return true;
  log(
    'Portkey is not installed: installing @portkey-ai/gateway 1.15.2 into bench/peers/portkey (npm ci, bench-local only)',
  );
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: PORTKEY_DIR,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (r.status !== 0 || !existsSync(PORTKEY_JS)) {
    log(
      `Portkey skipped: npm ci in bench/peers/portkey failed (${(r.stderr || r.error?.message || '').trim().split('\n').pop()})`,
    );
    return false;
  }
  return true;
}

const targets = {}; // name -> { base, headers: { openai, upload }, group }
const mock = {};

/** BENCH_TRACE_GC=1 runs Tollgate with --trace-gc: each collection goes to the target's log (kept with --keep-tmp). */
const TRACE_GC = process.env.BENCH_TRACE_GC ? ['--trace-gc'] : [];

/**
 * Starts a Tollgate target as `npm start` does (no Node flags); `nodeFlags`, `node` (another Node binary), `settings` (config values) and `root`
 * (another build) make an A/B variant.
 */
/** `admin`: { port, token } turns the admin API on (admin_contention). */
async function startTollgate(
  name,
  port,
  {
    recorder = true,
    metrics = true,
    plain = false,
    traced = false,
    workers = 1,
    redisUrl,
    admin,
    nodeFlags = [],
    node = process.execPath,
    settings = [],
    root = ROOT,
  } = {},
) {
  const data = join(tmp, `${name}-data`);
  mkdirSync(data, { recursive: true });
  const file = plain ? 'tollgate.plain.yaml' : 'tollgate.bench.yaml';
  let yaml = applySettings(readFileSync(join(HERE, file), 'utf8'), settings);
  if (!recorder) yaml = yaml.replace(/\n {2}- use: usage-recorder\n( {4}.*\n)*/, '\n');
  if (admin) yaml += `\nadmin:\n  host: 127.0.0.1\n  port: ${admin.port}\n  token: "${admin.token}"\n`;
  if (!metrics) yaml += '\nmetrics:\n  enabled: false\n';
  if (redisUrl)
    yaml += `\nlimit_store:\n  redis_url: ${redisUrl}\n  key_prefix: "tollgate-bench-${process.pid}-${name}:"\n`;
  const config = join(data, 'gateway.config.yaml');
  writeFileSync(config, yaml);
  const g = startGroup(
    name,
    node,
    [...nodeFlags, ...TRACE_GC, join(root, 'dist', 'cli', 'index.js'), 'start', '--config', config],
    {
      BENCH_PORT: String(port),
      BENCH_DATA: data,
      BENCH_WORKERS: String(workers),
      MOCK_URL: mock.url,
      GATEWAY_KEY,
      TOLLGATE_ADMIN_TOKEN: '',
      // Tracing only where asked for, whatever OTEL_* variables this shell has: one request in ten sampled (what a
      // production deployment runs), spans sent to the mock.
      ...(traced
        ? {
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_EXPORTER_OTLP_ENDPOINT: mock.url,
            OTEL_TRACES_SAMPLER: 'traceidratio',
            OTEL_TRACES_SAMPLER_ARG: String(TRACE_RATIO),
          }
        : { OTEL_TRACES_EXPORTER: 'none' }),
    },
  );
  const ready = async () => {
    if (!(await waitTcp(port, 30, g))) return false;
    if (workers <= 1) return true;
    // Multi-core: the port answers as soon as one worker listens; wait for all of them.
    for (let i = 0; i < 300 && !g.exited; i++) {
      if (readFileSync(g.logFile, 'utf8').includes(`${workers} worker processes serve`)) return true;
      await sleep(100);
    }
    return false;
  };
  if (!(await ready())) {
    log(
      `${name} did not start; last lines of its log:\n${readFileSync(g.logFile, 'utf8').split('\n').slice(-8).join('\n')}`,
    );
    await stopGroup(name);
    return false;
  }
  const common = [`X-Gateway-Key: ${GATEWAY_KEY}`, 'Authorization: Bearer sk-mock', ...TAG_HEADERS];
  targets[name] = {
    base: `http://127.0.0.1:${port}/v1`,
    headers: { json: common, upload: common },
    group: g,
    data,
    workers,
    limitStore: redisUrl ? 'redis' : 'memory',
  };
  return true;
}

async function startMock() {
  mock.port = await freePort();
  mock.url = `http://127.0.0.1:${mock.port}`;
  mock.group = startGroup('mock', process.execPath, [join(HERE, 'mock-upstream.mjs')], {
    MOCK_PORT: String(mock.port),
    MOCK_CHUNK_DELAY_MS: '0',
  });
  if (!(await waitHttp(`${mock.url}/health`, 10))) die('the mock provider did not start');
}

async function startTargets() {
  await startMock();
  const auth = ['Authorization: Bearer sk-mock'];
  if (TARGETS.includes('direct')) targets.direct = { base: `${mock.url}/v1`, headers: { json: auth, upload: auth } };
  for (const [name, script] of [
    ['bare', 'bare-proxy.mjs'],
    ['bare-dispatch', 'bare-dispatch.mjs'],
  ]) {
    if (!TARGETS.includes(name)) continue;
    const port = await freePort();
    const g = startGroup(name, process.execPath, [join(HERE, script)], { PORT: String(port), UPSTREAM: mock.url });
    if (await waitTcp(port, 10, g))
      targets[name] = { base: `http://127.0.0.1:${port}/v1`, headers: { json: auth, upload: auth }, group: g };
    else log(`${name} did not start: skipped`);
  }
  if (TARGETS.includes('tollgate') && !(await startTollgate('tollgate', await freePort())))
    die('tollgate did not start (did `npm run build` run?)');
  if (TARGETS.includes('tollgate-plain')) await startTollgate('tollgate-plain', await freePort(), { plain: true });
  if (TARGETS.includes('tollgate-norec')) await startTollgate('tollgate-norec', await freePort(), { recorder: false });
  if (TARGETS.includes('tollgate-nometrics'))
    await startTollgate('tollgate-nometrics', await freePort(), { metrics: false });
  if (TARGETS.includes('tollgate-traced')) await startTollgate('tollgate-traced', await freePort(), { traced: true });
  const redisUrl = TARGETS.includes(CLUSTER) ? await localRedis() : undefined;
  if (TARGETS.includes(CLUSTER))
    log(
      `${CLUSTER}: ${redisUrl ? `limits shared through Redis at ${redisUrl}` : 'no local Redis answered: each worker keeps its own limits (memory store)'}`,
    );
  // The same single process with its limits in Redis: what the multi-core target scales from.
  if (redisUrl && TARGETS.includes('tollgate-redis'))
    await startTollgate('tollgate-redis', await freePort(), { redisUrl });
  if (TARGETS.includes(CLUSTER) && !(await startTollgate(CLUSTER, await freePort(), { workers: WORKERS, redisUrl }))) {
    log(`${CLUSTER} skipped: tollgate did not start with server.workers = ${WORKERS}`);
  }
  if (TARGETS.includes('portkey') && ensurePortkey()) {
    const port = await freePort();
    const g = startGroup('portkey', process.execPath, [
      '--import',
      join(HERE, 'lib', 'loopback-listen.mjs'),
      PORTKEY_JS,
      `--port=${port}`,
      '--headless',
    ]);
    if (await waitHttp(`http://127.0.0.1:${port}/`, 30)) {
      const ph = [
        'Authorization: Bearer sk-mock',
        'x-portkey-provider: openai',
        `x-portkey-custom-host: ${mock.url}/v1`,
      ];
      targets.portkey = { base: `http://127.0.0.1:${port}/v1`, headers: { json: ph, upload: ph }, group: g };
    } else {
      log('Portkey skipped: it did not start (see its log)');
      await stopGroup('portkey');
    }
  } else if (TARGETS.includes('portkey')) {
    log('Portkey skipped: not installed and could not be installed; the table has no Portkey column');
  }
  await sleep(300);
  checkLoopback();
}

/** A Redis on the loopback (BENCH_REDIS_URL, else 127.0.0.1:6379) that answers PING, for the multi-core target. */
async function localRedis() {
  if (flag('--no-redis')) return undefined;
  const url = new URL(process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379');
  if (!/^(127\.|localhost$|\[::1\]$)/.test(url.hostname)) return undefined;
  return new Promise((resolveUrl) => {
    const c = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) }, () =>
      c.write('PING\r\n'),
    );
    const done = (ok) => {
      c.destroy();
      resolveUrl(ok ? url.href.replace(/\/$/, '') : undefined);
    };
    c.setTimeout(1000, () => done(false));
    c.on('data', (d) => done(String(d).startsWith('+PONG')));
    c.on('error', () => done(false));
  });
}

// ------------------------------------------------------------------ scenarios
const BODY_DIR = join(HERE, 'bodies');
function slowBody() {
  const file = join(tmp, 'chat_stream_slow.json');
  const body = JSON.parse(readFileSync(join(BODY_DIR, 'chat_stream.json'), 'utf8'));
  body.model = `${body.model}-slow${SLOW_CHUNK_MS}`;
  writeFileSync(file, JSON.stringify(body));
  return file;
}
/**
 * A 20 MiB transcription form. `model first` is what Python's SDK sends (plain fields, then files): Tollgate routes
 * it when the file part begins and streams it through. `file first` is what the Node SDK sends for `{ file, model }`:
 * Tollgate receives it whole (into a temporary file) before it knows where to send it.
 */
function uploadBody(order) {
  const file = join(tmp, `upload-${order.replace(' ', '-')}.multipart`);
  const boundary = '----tollgatebench' + randomBytes(8).toString('hex');
  const model = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n`;
  const fileHead = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`;
  const format = `--${boundary}\r\nContent-Disposition: form-data; name="response_format"\r\n\r\njson\r\n`;
  const parts =
    order === 'model first'
      ? [model, fileHead, randomBytes(UPLOAD_BYTES), `\r\n${format}--${boundary}--\r\n`]
      : [fileHead, randomBytes(UPLOAD_BYTES), `\r\n${model}${format}--${boundary}--\r\n`];
  writeFileSync(file, Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p)))));
  return { file, contentType: `multipart/form-data; boundary=${boundary}` };
}

function scenarioDefs() {
  const core = ['direct', 'bare', 'bare-dispatch', 'tollgate', 'tollgate-plain', 'portkey'];
  return {
    chat_c1: { path: '/chat/completions', body: join(BODY_DIR, 'chat.json'), mode: 'plain', c: 1, targets: core },
    chat_c32: {
      path: '/chat/completions',
      body: join(BODY_DIR, 'chat.json'),
      mode: 'plain',
      c: 32,
      targets: [
        'direct',
        'bare',
        'bare-dispatch',
        'tollgate',
        'tollgate-plain',
        'tollgate-norec',
        'tollgate-nometrics',
        'tollgate-traced',
        'tollgate-redis',
        CLUSTER,
        'portkey',
      ],
    },
    stream_c8: {
      path: '/chat/completions',
      body: join(BODY_DIR, 'chat_stream.json'),
      mode: 'stream',
      c: 8,
      targets: core,
    },
    slow_stream_c8: { path: '/chat/completions', body: slowBody(), mode: 'stream', c: 8, targets: core },
    sustained_20ms: {
      path: '/chat/completions',
      body: waitBody(BODY_DIR, tmp),
      mode: 'plain',
      targets: ['direct', 'bare', 'bare-dispatch', 'tollgate', 'tollgate-plain', 'portkey'],
    },
    upload_c1: SCENARIOS.includes('upload_c1') && uploadScenario(uploadBody('model first'), core),
    upload_spooled_c1: SCENARIOS.includes('upload_spooled_c1') && uploadScenario(uploadBody('file first'), core),
  };
}

function uploadScenario(upload, core) {
  return {
    path: '/audio/transcriptions',
    body: upload.file,
    mode: 'plain',
    c: 1,
    targets: core.filter((t) => t !== 'bare-dispatch'),
    headerKind: 'upload',
    extra: [`Content-Type: ${upload.contentType}`],
    duration: QUICK ? 1 : 4,
    warmup: QUICK ? 0.2 : 1,
  };
}

function runLoad(name, sc, target, { duration = DURATION, warmup = WARMUP, c = sc.c, label = name } = {}) {
  const t = targets[target];
  const args = [
    join(HERE, 'load.mjs'),
    '--url',
    t.base + sc.path,
    '--body-file',
    sc.body,
    '--mode',
    sc.mode,
    '-c',
    String(c),
    '-d',
    String(duration),
    '--warmup',
    String(warmup),
    '--tag',
    `scenario=${label}`,
    '--tag',
    `target=${target}`,
    '--watch',
    `mock=${mock.group.pgid}`,
  ];
  for (const h of [...(t.headers[sc.headerKind ?? 'json'] ?? []), ...(sc.extra ?? [])]) args.push('-H', h);
  if (t.group) args.push('--watch', `gw=${t.group.pgid}`);
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (duration + warmup + 45) * 1000);
    child.on('exit', () => {
      clearTimeout(timer);
      try {
        resolveRun(JSON.parse(out.trim().split('\n').pop()));
      } catch {
        log(`load run ${label}/${target} failed: ${err.trim().split('\n').slice(-3).join(' | ')}`);
        resolveRun(undefined);
      }
    });
  });
}

/** One request per scenario and target; the mock's counter must move (the gateway really forwarded). */
async function preflight(name, sc, target) {
  const t = targets[target];
  const before = (await (await fetch(`${mock.url}/__mock/stats`)).json()).total;
  const headers = { 'content-type': 'application/json' };
  for (const h of [...(t.headers[sc.headerKind ?? 'json'] ?? []), ...(sc.extra ?? [])]) {
    const i = h.indexOf(':');
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  let status = 0;
  let text;
  try {
    const r = await fetch(t.base + sc.path, {
      method: 'POST',
      headers,
      body: readFileSync(sc.body),
      signal: AbortSignal.timeout(15_000),
    });
    status = r.status;
    text = await r.text();
  } catch (e) {
    text = e.message;
  }
  const after = (await (await fetch(`${mock.url}/__mock/stats`)).json()).total;
  if (status < 200 || status > 299 || after <= before) {
    log(`preflight failed ${name}/${target}: HTTP ${status}, mock ${before} -> ${after}: ${text.slice(0, 200)}`);
    return false;
  }
  return true;
}

function summarise(r) {
  if (!r) return '(failed)';
  const l = r.latency_ms ?? {};
  let s = `rps=${r.rps} p50=${l.p50} p99=${l.p99} err=${r.errors + r.non2xx + (r.bad_stream_end ?? 0)}`;
  if (r.ttfb_ms) s += ` ttfb50=${r.ttfb_ms.p50}`;
  if (r.gap_ms) s += ` gap50=${r.gap_ms.p50}`;
  if (r.procs?.gw)
    s += ` gw=${r.procs.gw.cpu_pct}% ${r.procs.gw.cpu_us_per_req}us/req peak=${r.procs.gw.peak_rss_mb}MiB`;
  s += ` other=${r.other_cpu_pct}% steal=${r.steal_pct}%`;
  return s;
}

// ------------------------------------------------------------------ A/B, alternating
/**
 * A difference of a few % between two targets is smaller than how much this machine drifts between two cases a
 * minute apart. So two targets are compared in one sequence that alternates them, B first and last (B, A, B, A,
 * ..., B), and each run of A is compared with the mean of the two runs of B on either side: a drift that is linear
 * over three runs cancels out. Strict alternation also gives both targets the same idle time between their runs.
 * Both targets first get one unmeasured run: their last case was minutes ago.
 */
async function alternate(
  name,
  sc,
  a,
  b,
  { n = AB_PAIRS, duration = QUICK ? 1 : 4, warmup = QUICK ? 0.2 : 1, label = name } = {},
) {
  const run = async (target, d = duration) => {
    await waitQuiet();
    const g = targets[target].group;
    resetPeak(g.pgid);
    const rssBefore = groupStat(g.pgid).rss_kb;
    const r = await runLoad(name, sc, target, { duration: d, warmup, label });
    if (r) r.rss_before_mb = mib(rssBefore);
    return r;
  };
  for (const target of [b, a]) await run(target, QUICK ? 0.5 : 2);
  const bRuns = [await run(b)];
  const rounds = [];
  for (let i = 0; i < n; i++) {
    const on = await run(a);
    bRuns.push(await run(b));
    const [before, after] = bRuns.slice(-2);
    if (!on?.rps || !before?.rps || !after?.rps) continue;
    rounds.push(pairUp(on, before, after));
  }
  return rounds;
}

/**
 * A feature's cost in chat_c32 (the usage recorder, the metrics, tracing): the target with it (A) against the one
 * without (B), alternating. The target reads the median of the ratios.
 */
async function featureAB(sc, onTarget, offTarget, label, what) {
  if (!targets[onTarget] || !targets[offTarget]) return undefined;
  const duration = QUICK ? 1 : 4;
  const rounds = (await alternate('chat_c32', sc, onTarget, offTarget, { duration, label })).map((r) => ({
    on_rps: r.a.rps,
    off_rps: Math.round(r.b.rps * 10) / 10,
    ratio: r.ratio.rps,
    on_cpu_us: r.a.cpu_us,
    off_cpu_us: r.b.cpu_us && Math.round(r.b.cpu_us),
    cpu_ratio: r.ratio.cpu,
  }));
  if (!rounds.length) return undefined;
  const cpuRatios = rounds.map((r) => r.cpu_ratio).filter((x) => x != null);
  const res = {
    method: 'alternating',
    off: offTarget,
    on: onTarget,
    rounds,
    median_ratio: medianInterval(rounds.map((r) => r.ratio)).median,
    median_cpu_ratio: cpuRatios.length ? medianInterval(cpuRatios).median : undefined,
    seconds_each: duration,
  };
  log(
    `${what} A/B (chat, 32 conn, ${rounds.length} runs of ${duration} s of ${onTarget}, each against the runs of ${offTarget} on either side): ` +
      `req/s ratios ${rounds.map((r) => r.ratio).join(', ')}; median ${res.median_ratio}; CPU per request ratios ${cpuRatios.join(', ')}, median ${res.median_cpu_ratio}`,
  );
  return res;
}

/**
 * Spans the mock received against requests the traced target served (its request log lines): a batch processor
 * whose queue overflows drops spans, which would make tracing look cheaper than it is.
 */
async function exportedSpans() {
  await sleep(6000); // the batch timer (OTEL_BSP_SCHEDULE_DELAY, 5 s) sends what is left
  const stats = await (await fetch(`${mock.url}/__mock/stats`)).json();
  const requests = readFileSync(targets['tollgate-traced'].group.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"request"')).length;
  log(
    `tracing: ${stats.otlp_spans ?? 0} spans exported in ${stats.otlp_exports ?? 0} batches for ${requests} requests`,
  );
  return { exported: stats.otlp_spans ?? 0, batches: stats.otlp_exports ?? 0, requests };
}

/** --ab: the two variants, scenario by scenario, alternating; prints and writes ab-latest.{json,md}. */
async function variantsAB() {
  const variants = AB_SPECS.map((spec, i) => parseVariant(spec, i ? 'B' : 'A', ROOT));
  if (variants[0].name === variants[1].name) die('--ab: the two variants need different names');
  await startMock();
  for (const [i, v] of variants.entries()) {
    v.target = `tollgate-${'ab'[i]}`;
    if (!(await startTollgate(v.target, await freePort(), v))) die(`variant ${v.name} did not start`);
  }
  await sleep(300);
  checkLoopback();
  const [a, b] = variants;
  const defs = scenarioDefs();
  const result = {
    version: 1,
    kind: 'ab',
    date: new Date().toISOString(),
    quick: QUICK,
    variants: Object.fromEntries(
      variants.map((v, i) => [
        'ab'[i],
        { name: v.name, description: describeVariant(v, ROOT), node_flags: v.nodeFlags, root: v.root },
      ]),
    ),
    scenarios: {},
    runs: {},
  };
  for (const name of SCENARIOS) {
    const sc = defs[name];
    if (!(await preflight(name, sc, a.target)) || !(await preflight(name, sc, b.target))) continue;
    // --duration / --warmup, when given, set every run's length; else a scenario's own (uploads) or 4 s after 1 s.
    const duration = argv.includes('--duration') ? DURATION : (sc.duration ?? (QUICK ? 1 : 4));
    const warmup = argv.includes('--warmup') ? WARMUP : (sc.warmup ?? (QUICK ? 0.2 : 1));
    const rounds = await alternate(name, sc, a.target, b.target, { duration, warmup });
    result.runs[name] = rounds;
    result.scenarios[name] = rounds.length
      ? { ...summariseAB(rounds), seconds_each: duration, warmup_each: warmup }
      : undefined;
    const s = result.scenarios[name];
    if (s)
      log(
        `A/B ${name}: CPU/req ${a.name} vs ${b.name} ${rounds.map((r) => r.ratio.cpu).join(', ')} (median ${s.ratio.cpu?.median}); ` +
          `peak RSS ${rounds.map((r) => r.ratio.peak_rss).join(', ')} (median ${s.ratio.peak_rss?.median}); ${a.name} pays: ${s.pays}`,
      );
  }
  result.elapsed_s = Math.round((Date.now() - started) / 1000);
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(join(OUT_DIR, 'ab-latest.json'), JSON.stringify(result, null, 2) + '\n');
  const report = renderAB(result);
  writeFileSync(join(OUT_DIR, 'ab-latest.md'), report + '\n');
  console.log(report);
  log(`results: ${join(OUT_DIR, 'ab-latest.json')} (and ab-latest.md); ${result.elapsed_s} s in total`);
  await shutdown(0);
}

// ------------------------------------------------------------------ soak: memory over a long mixed load
async function soak(runs) {
  const t = targets.tollgate;
  if (!t) return undefined;
  const pgid = t.group.pgid;
  const defs = scenarioDefs.cache;
  const mixed = (duration, label) =>
    Promise.all([
      runLoad('soak', defs.chat_c32, 'tollgate', { duration, warmup: 0, c: 16, label: `${label}_chat` }),
      runLoad('soak', defs.stream_c8, 'tollgate', { duration, warmup: 0, c: 4, label: `${label}_stream` }),
    ]);
  // "Before" and "after" are read in the same state: warm (code compiled, pools and caches filled by a short run
  // of the same mix, which is not reported) and idle for as long after that load as after the soak.
  const idle = QUICK ? 3000 : 30_000;
  await waitQuiet();
  await mixed(QUICK ? 1 : 5, 'soak_warmup');
  await sleep(idle);
  const before = groupStat(pgid).rss_kb;
  resetPeak(pgid);
  log(
    `soak: ${SOAK} s of mixed load on tollgate (chat at 16 connections + streams at 4), RSS before ${mib(before)} MiB`,
  );
  let max = before;
  const sampler = setInterval(() => {
    max = Math.max(max, groupStat(pgid).rss_kb);
  }, 500);
  const [chat, stream] = await mixed(SOAK, 'soak');
  clearInterval(sampler);
  for (const r of [chat, stream]) if (r) runs.push(r);
  const peak = Math.max(max, groupStat(pgid).hwm_kb);
  // Settle: let timers flush the record queue. RSS is read at `settle`, and at `idle`, as long after the load as
  // "before" was.
  const settle = QUICK ? 1500 : 6000;
  await sleep(settle);
  const after = groupStat(pgid).rss_kb;
  await sleep(idle - settle);
  const afterIdle = groupStat(pgid).rss_kb;
  const ratio = (kb) => Math.round((kb / before) * 1000) / 1000;
  const res = {
    seconds: SOAK,
    requests: (chat?.requests ?? 0) + (stream?.requests ?? 0),
    errors: (chat?.errors ?? 0) + (stream?.errors ?? 0) + (chat?.non2xx ?? 0) + (stream?.non2xx ?? 0),
    rss_before_mb: mib(before),
    rss_peak_mb: mib(peak),
    rss_after_mb: mib(after),
    settle_s: settle / 1000,
    after_vs_before: ratio(after),
    rss_after_idle_mb: mib(afterIdle),
    idle_s: idle / 1000,
    after_idle_vs_before: ratio(afterIdle),
  };
  log(
    `soak: ${res.requests} requests, RSS before ${res.rss_before_mb} MiB, peak ${res.rss_peak_mb} MiB, ` +
      `${res.settle_s} s after ${res.rss_after_mb} MiB (${res.after_vs_before}x), ${res.idle_s} s after ${res.rss_after_idle_mb} MiB (${res.after_idle_vs_before}x)`,
  );
  return res;
}

// ------------------------------------------------------------------ main
async function main() {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'index.js')))
    die('dist/ is missing: run `npm run build` first (npm run bench does)');
  if (AB_SPECS.length) return variantsAB();
  log(
    `${QUICK ? 'quick' : 'full'} run: ${DURATION}s measured after ${WARMUP}s warm-up per case; scenarios ${SCENARIOS.join(', ')}; temp dir ${tmp}`,
  );
  await startTargets();
  log(`targets: ${Object.keys(targets).join(', ')}`);
  const idle = {};
  for (const [name, t] of Object.entries(targets)) if (t.group) idle[name] = mib(groupStat(t.group.pgid).rss_kb);

  const defs = scenarioDefs();
  scenarioDefs.cache = defs;
  const runs = [];
  const memory = { idle_rss_mb: idle };
  let contention;
  let sustained;
  for (const name of SCENARIOS) {
    if (name === 'soak') {
      memory.soak = await soak(runs);
      continue;
    }
    if (name === 'sustained_20ms') {
      const sc = defs[name];
      const targetNames = sc.targets.filter((t) => targets[t]);
      sustained = await sustainedRates({ sc, targetNames, quick: QUICK, runLoad, waitQuiet, preflight, log, runs });
      continue;
    }
    if (name === 'admin_contention') {
      contention = await adminContention({
        quick: QUICK,
        records: Number(value('--admin-records', 100_000)),
        rounds: Number(value('--admin-rounds', QUICK ? 1 : 3)),
        root: ROOT,
        tmp,
        log,
        freePort,
        startTollgate,
        runLoad,
        waitQuiet,
        chatBody: join(BODY_DIR, 'chat.json'),
      });
      continue;
    }
    const sc = defs[name];
    for (const target of sc.targets) {
      if (!targets[target]) continue;
      if (!(await preflight(name, sc, target))) continue;
      const g = targets[target].group;
      if (name.startsWith('upload')) await sleep(QUICK ? 300 : 1000);
      await waitQuiet();
      if (g) resetPeak(g.pgid);
      const rssBefore = g ? groupStat(g.pgid).rss_kb : 0;
      // Each worker of the multi-core target warms its JIT up on its own share of the requests: twice the warm-up.
      const r = await runLoad(name, sc, target, target === CLUSTER ? { ...sc, warmup: (sc.warmup ?? WARMUP) * 2 } : sc);
      if (r) {
        if (g) r.rss_before_mb = mib(rssBefore);
        runs.push(r);
      }
      log(`${name.padEnd(15)} ${target.padEnd(15)} ${summarise(r)}`);
    }
    if (name === 'chat_c32') {
      memory.recorder_ab = await featureAB(sc, 'tollgate', 'tollgate-norec', 'recorder_ab', 'recorder');
      memory.metrics_ab = await featureAB(sc, 'tollgate', 'tollgate-nometrics', 'metrics_ab', 'metrics');
      memory.tracing_ab = await featureAB(sc, 'tollgate-traced', 'tollgate', 'tracing_ab', 'tracing');
      if (memory.tracing_ab) memory.tracing_ab.spans = await exportedSpans();
    }
  }
  for (const [name, t] of Object.entries(targets))
    if (t.group) memory[name] = { ...(memory[name] ?? {}), rss_end_mb: mib(groupStat(t.group.pgid).rss_kb) };

  const result = {
    version: 1,
    date: new Date().toISOString(),
    quick: QUICK,
    settings: {
      duration_s: DURATION,
      warmup_s: WARMUP,
      soak_s: SOAK,
      workers: WORKERS,
      upload_bytes: UPLOAD_BYTES,
      slow_chunk_ms: SLOW_CHUNK_MS,
      stream_chunks: 20,
    },
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      mem_gib: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    targets: Object.keys(targets),
    target_details: Object.fromEntries(
      Object.entries(targets)
        .filter(([, t]) => t.workers)
        .map(([n, t]) => [n, { workers: t.workers, limit_store: t.limitStore }]),
    ),
    runs,
    memory,
    admin_contention: contention,
    sustained,
    elapsed_s: Math.round((Date.now() - started) / 1000),
  };
  mkdirSync(OUT_DIR, { recursive: true });
  const latest = join(OUT_DIR, 'latest.json');
  const compareWith = value('--compare', existsSync(latest) ? latest : join(ROOT, 'docs', 'bench-latest.json'));
  let previous;
  try {
    previous = JSON.parse(readFileSync(compareWith, 'utf8'));
  } catch {
    previous = undefined;
  }
  if (existsSync(latest)) renameSync(latest, join(OUT_DIR, 'previous.json'));
  const stamp = result.date.replace(/[:.]/g, '-');
  writeFileSync(join(OUT_DIR, `${stamp}.json`), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(latest, JSON.stringify(result, null, 2) + '\n');
  const report = renderReport(result, previous, previous ? compareWith : undefined);
  writeFileSync(join(OUT_DIR, 'latest.md'), report + '\n');
  console.log(report);
  log(`results: ${latest} (also ${stamp}.json, latest.md); ${result.elapsed_s} s in total`);
  await shutdown(0);
}

main().catch((err) => {
  log(err.stack ?? String(err));
  shutdown(1);
});
