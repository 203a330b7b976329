#!/usr/bin/env node
// Closed-loop HTTP/1.1 load generator with no dependencies (raw node:net sockets, keep-alive,
// one request in flight per connection, hand-written response parser for Content-Length and
// chunked bodies). Prints one JSON object on stdout.
//
// usage: node load.mjs --url URL [--method POST] [--body JSON | --body-file F] [-H 'k: v' ...]
//                      [--connections 32] [--duration 10] [--warmup 2] [--mode plain|stream]
//                      [--timeout 30] [--label NAME] [--watch NAME=PGID ...] [--tag k=v ...]
//
// plain  : latency = request written -> last body byte.
// stream : also ttfb (request written -> first body byte, i.e. first SSE bytes) and ttfh
//          (-> response headers), counts SSE `data:` events per response and checks the
//          stream terminated properly ("data: [DONE]" for OpenAI, "message_stop" for Anthropic).
//          gap_ms: time between two successive socket reads of one response body (the inter-chunk delay
//          the client sees); span_ms: first body byte -> last body byte of each response.
// --body-file is read as bytes (a multipart upload works as well as JSON).
//
// Only loopback targets are allowed (this is a local benchmark tool).
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { groupStat, machineCpu } from './lib/proc.mjs';

// ---------------------------------------------------------------- args
function parseArgs(argv) {
  const o = {
    url: null,
    method: 'POST',
    headers: [],
    body: null,
    connections: 32,
    duration: 10,
    warmup: 0,
    mode: 'plain',
    timeout: 30,
    label: '',
    watch: [],
    tags: {},
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    switch (a) {
      case '--url':
        o.url = v();
        break;
      case '--method':
      case '-X':
        o.method = v().toUpperCase();
        break;
      case '-H':
      case '--header':
        o.headers.push(v());
        break;
      case '--body':
        o.body = v();
        break;
      case '--body-file':
        o.body = readFileSync(v());
        break;
      case '--connections':
      case '-c':
        o.connections = Number(v());
        break;
      case '--duration':
      case '-d':
        o.duration = Number(v());
        break;
      case '--warmup':
        o.warmup = Number(v());
        break;
      case '--mode':
        o.mode = v();
        break;
      case '--timeout':
        o.timeout = Number(v());
        break;
      case '--label':
        o.label = v();
        break;
      case '--watch': {
        // NAME=PGID : report CPU/RSS of that process group over the measured window
        const [n, g] = v().split('=');
        if (!n || !(Number(g) > 0)) throw new Error('--watch wants NAME=PGID');
        o.watch.push([n, Number(g)]);
        break;
      }
      case '--tag': {
        const t = v();
        const i = t.indexOf('=');
        o.tags[t.slice(0, i)] = t.slice(i + 1);
        break;
      }
      case '-h':
      case '--help':
        console.error(
          readFileSync(new URL(import.meta.url))
            .toString()
            .split('\n')
            .slice(1, 15)
            .join('\n'),
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${a}`);
    }
  }
  if (!o.url) throw new Error('--url is required');
  if (!['plain', 'stream'].includes(o.mode)) throw new Error('--mode must be plain or stream');
  if (!(o.connections >= 1) || !(o.duration > 0)) throw new Error('bad --connections/--duration');
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const u = new URL(opts.url);
if (u.protocol !== 'http:') throw new Error('only http:// is supported');
const host = u.hostname.replace(/^\[|\]$/g, '');
if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host)) {
  console.error(`load.mjs: refusing non-loopback target ${host}`);
  process.exit(2);
}
const port = Number(u.port || 80);
const STREAM = opts.mode === 'stream';

// ---------------------------------------------------------------- request bytes (built once)
const bodyBuf = opts.body != null ? Buffer.from(opts.body) : null;
let head = `${opts.method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n`;
const have = new Set();
for (const h of opts.headers) {
  const i = h.indexOf(':');
  if (i <= 0) throw new Error(`bad header ${h}`);
  const k = h.slice(0, i).trim();
  have.add(k.toLowerCase());
  head += `${k}: ${h.slice(i + 1).trim()}\r\n`;
}
if (bodyBuf) {
  if (!have.has('content-type')) head += 'Content-Type: application/json\r\n';
  head += `Content-Length: ${bodyBuf.length}\r\n`;
}
if (!have.has('user-agent')) head += 'User-Agent: bench-load/1\r\n';
if (STREAM && !have.has('accept')) head += 'Accept: text/event-stream\r\n';
head += '\r\n';
const REQ = bodyBuf ? Buffer.concat([Buffer.from(head, 'latin1'), bodyBuf]) : Buffer.from(head, 'latin1');

// ---------------------------------------------------------------- stats
class Samples {
  constructor() {
    this.a = new Float64Array(1 << 16);
    this.n = 0;
  }
  push(x) {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = x;
  }
  summary() {
    if (!this.n) return null;
    const s = this.a.slice(0, this.n).sort();
    const q = (p) => s[Math.min(this.n - 1, Math.max(0, Math.ceil(p * this.n) - 1))];
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += s[i];
    const r = (x) => Math.round(x * 1000) / 1000;
    return {
      min: r(s[0]),
      mean: r(sum / this.n),
      p50: r(q(0.5)),
      p90: r(q(0.9)),
      p99: r(q(0.99)),
      max: r(s[this.n - 1]),
    };
  }
}

const st = {
  latency: new Samples(),
  ttfb: new Samples(),
  ttfh: new Samples(),
  gap: new Samples(),
  span: new Samples(),
  completedInWindow: 0,
  recorded: 0,
  errors: 0,
  timeouts: 0,
  non2xx: 0,
  status: {},
  bytes: 0,
  reconnects: 0,
  evMin: Infinity,
  evMax: 0,
  badStreamEnd: 0,
  errorKinds: {},
  sample: null,
};
let phase = 'warmup'; // warmup -> measure -> drain -> done
let measureStart = 0;
let measureEnd = 0;

// ---------------------------------------------------------------- connection
const S_HDR = 0,
  S_CL = 1,
  S_CSIZE = 2,
  S_CDATA = 3,
  S_CCRLF = 4,
  S_TRAILER = 5,
  S_CLOSE = 6;
const conns = [];

class Conn {
  constructor() {
    this.sock = null;
    this.inflight = false;
    this.dead = false;
    this.connect();
  }

  connect() {
    if (phase === 'done' || phase === 'drain') {
      this.dead = true;
      return;
    }
    const s = net.connect({ host, port });
    this.sock = s;
    s.setNoDelay(true);
    s.on('connect', () => this.send());
    s.on('data', (b) => this.onData(b));
    s.on('error', (e) => {
      this.errKind = e.code || e.message;
    });
    s.on('close', () => this.onClose(s));
  }

  send() {
    if (phase === 'done' || phase === 'drain') {
      this.dead = true;
      this.sock.destroy();
      return;
    }
    this.state = S_HDR;
    this.hbuf = null;
    this.line = '';
    this.remaining = 0;
    this.tHead = 0;
    this.tFirst = 0;
    this.tLast = 0;
    this.status = 0;
    this.close = false;
    this.body = STREAM || st.sample == null ? '' : null;
    this.inflight = true;
    this.t0 = performance.now();
    this.sock.write(REQ);
  }

  fail(kind) {
    if (this.inflight && this.t0 >= measureStart && phase !== 'warmup') {
      st.errors++;
      st.errorKinds[kind] = (st.errorKinds[kind] || 0) + 1;
    }
    this.inflight = false;
  }

  onClose(s) {
    if (s !== this.sock) return;
    if (this.inflight) {
      if (this.state === S_CLOSE) this.complete();
      else this.fail(this.errKind || 'socket closed mid-response');
    } else if (this.errKind && phase === 'measure') {
      // e.g. ECONNREFUSED / ECONNRESET while idle or connecting
      st.errors++;
      st.errorKinds[this.errKind] = (st.errorKinds[this.errKind] || 0) + 1;
    }
    this.errKind = null;
    if (phase === 'warmup' || phase === 'measure') {
      st.reconnects++;
      // avoid a hot loop against a refused port
      setTimeout(() => this.connect(), 20);
    } else this.dead = true;
  }

  onBodyBytes(buf, a, b) {
    if (b <= a) return;
    const t = this.tRead;
    if (!this.tFirst) this.tFirst = t;
    else if (STREAM && t !== this.tLast && phase !== 'warmup' && this.t0 >= measureStart) st.gap.push(t - this.tLast);
    this.tLast = t;
    if (this.body !== null) this.body += buf.toString('utf8', a, b);
    if (phase !== 'warmup') st.bytes += b - a;
  }

  onData(buf) {
    if (!this.inflight) return;
    this.tRead = performance.now();
    let off = 0;
    if (this.state === S_HDR) {
      const data = this.hbuf ? Buffer.concat([this.hbuf, buf]) : buf;
      const idx = data.indexOf('\r\n\r\n');
      if (idx < 0) {
        this.hbuf = data;
        if (data.length > 1 << 16) {
          this.fail('header too large');
          this.sock.destroy();
        }
        return;
      }
      this.hbuf = null;
      this.tHead = performance.now();
      const headStr = data.toString('latin1', 0, idx);
      this.status = parseInt(headStr.slice(9, 12), 10);
      let cl = -1,
        chunked = false;
      let p = headStr.indexOf('\r\n') + 2;
      while (p > 1 && p < headStr.length) {
        let e = headStr.indexOf('\r\n', p);
        if (e < 0) e = headStr.length;
        const c = headStr.indexOf(':', p);
        if (c > 0 && c < e) {
          const name = headStr.slice(p, c).trim().toLowerCase();
          if (name === 'content-length') cl = parseInt(headStr.slice(c + 1, e).trim(), 10);
          else if (name === 'transfer-encoding') chunked = /chunked/i.test(headStr.slice(c + 1, e));
          else if (name === 'connection') this.close = /close/i.test(headStr.slice(c + 1, e));
        }
        p = e + 2;
      }
      buf = data;
      off = idx + 4;
      if (this.status === 204 || this.status === 304 || opts.method === 'HEAD') return this.complete();
      if (chunked) this.state = S_CSIZE;
      else if (cl >= 0) {
        this.state = S_CL;
        this.remaining = cl;
        if (cl === 0) return this.complete();
      } else {
        this.state = S_CLOSE;
        this.close = true;
      }
    }
    while (off < buf.length && this.inflight) {
      switch (this.state) {
        case S_CL: {
          const n = Math.min(this.remaining, buf.length - off);
          this.onBodyBytes(buf, off, off + n);
          this.remaining -= n;
          off += n;
          if (this.remaining === 0) this.complete();
          break;
        }
        case S_CSIZE:
        case S_TRAILER: {
          const nl = buf.indexOf(10, off);
          if (nl < 0) {
            this.line += buf.toString('latin1', off);
            off = buf.length;
            break;
          }
          this.line += buf.toString('latin1', off, nl);
          off = nl + 1;
          const line = this.line.trim();
          this.line = '';
          if (this.state === S_TRAILER) {
            if (line === '') this.complete();
            break;
          }
          const size = parseInt(line, 16);
          if (Number.isNaN(size)) {
            this.fail('bad chunk size');
            this.sock.destroy();
            return;
          }
          if (size === 0) this.state = S_TRAILER;
          else {
            this.state = S_CDATA;
            this.remaining = size;
          }
          break;
        }
        case S_CDATA: {
          const n = Math.min(this.remaining, buf.length - off);
          this.onBodyBytes(buf, off, off + n);
          this.remaining -= n;
          off += n;
          if (this.remaining === 0) {
            this.state = S_CCRLF;
            this.remaining = 2;
          }
          break;
        }
        case S_CCRLF: {
          const n = Math.min(this.remaining, buf.length - off);
          this.remaining -= n;
          off += n;
          if (this.remaining === 0) this.state = S_CSIZE;
          break;
        }
        case S_CLOSE: {
          this.onBodyBytes(buf, off, buf.length);
          off = buf.length;
          break;
        }
        default:
          off = buf.length;
      }
    }
  }

  complete() {
    const t1 = performance.now();
    this.inflight = false;
    if (phase !== 'warmup' && this.t0 >= measureStart) {
      const code = this.status;
      st.status[code] = (st.status[code] || 0) + 1;
      if (code < 200 || code > 299) st.non2xx++;
      if (t1 <= measureEnd || phase === 'measure') st.completedInWindow++;
      st.recorded++;
      st.latency.push(t1 - this.t0);
      if (STREAM) {
        st.ttfh.push(this.tHead - this.t0);
        st.ttfb.push((this.tFirst || t1) - this.t0);
        if (this.tFirst) st.span.push(this.tLast - this.tFirst);
        const b = this.body || '';
        let ev = 0,
          i = -1;
        while ((i = b.indexOf('data:', i + 1)) !== -1) if (i === 0 || b.charCodeAt(i - 1) === 10) ev++;
        if (ev < st.evMin) st.evMin = ev;
        if (ev > st.evMax) st.evMax = ev;
        if (code >= 200 && code < 300 && !/data: \[DONE\]|message_stop/.test(b.slice(-400))) st.badStreamEnd++;
      }
      if (st.sample == null && this.body != null) st.sample = { status: code, body: this.body.slice(0, 600) };
    }
    if (this.close) {
      this.sock.destroy();
      return;
    } // onClose reconnects
    if (phase === 'warmup' || phase === 'measure') this.send();
    else {
      this.dead = true;
      this.sock.destroy();
    }
  }
}

// ---------------------------------------------------------------- run
const TIMEOUT_MS = opts.timeout * 1000;
const watchdog = setInterval(() => {
  const t = performance.now();
  for (const c of conns) {
    if (c.inflight && t - c.t0 > TIMEOUT_MS) {
      if (c.t0 >= measureStart && phase !== 'warmup') st.timeouts++;
      c.fail('timeout');
      c.sock.destroy();
    }
  }
}, 200);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpu0 = { v: null };

async function main() {
  for (let i = 0; i < opts.connections; i++) conns.push(new Conn());
  if (opts.warmup > 0) await sleep(opts.warmup * 1000);
  phase = 'measure';
  measureStart = performance.now();
  cpu0.v = process.cpuUsage();
  const m0 = machineCpu();
  const w0 = opts.watch.map(([, g]) => groupStat(g));
  await sleep(opts.duration * 1000);
  measureEnd = performance.now();
  const cpu = process.cpuUsage(cpu0.v);
  const m1 = machineCpu();
  const w1 = opts.watch.map(([, g]) => groupStat(g));
  phase = 'drain';
  // let in-flight requests finish (bounded)
  const drainDeadline = performance.now() + Math.min(TIMEOUT_MS, 15000);
  while (conns.some((c) => c.inflight) && performance.now() < drainDeadline) await sleep(10);
  phase = 'done';
  clearInterval(watchdog);
  for (const c of conns) {
    if (c.inflight) {
      st.errors++;
      st.errorKinds['unfinished at end'] = (st.errorKinds['unfinished at end'] || 0) + 1;
    }
    c.sock?.destroy();
  }
  const window = (measureEnd - measureStart) / 1000;
  const procs = {};
  opts.watch.forEach(([name], i) => {
    const cpuMs = w1[i].cpu_ms - w0[i].cpu_ms;
    procs[name] = {
      pgid: w1[i].pgid,
      cpu_pct: Math.round((cpuMs / (window * 1000)) * 1000) / 10,
      cpu_us_per_req: st.completedInWindow ? Math.round((cpuMs * 1000) / st.completedInWindow) : null,
      rss_mb: Math.round(w1[i].rss_kb / 102.4) / 10,
      peak_rss_mb: Math.round(w1[i].hwm_kb / 102.4) / 10,
    };
  });
  // CPU used on the machine by anything else than the loader and the watched groups (other jobs = noise).
  const windowMs = measureEnd - measureStart;
  const machinePct = ((m1.busy_ms - m0.busy_ms) / windowMs) * 100;
  const loaderPct = ((cpu.user + cpu.system) / 1e3 / windowMs) * 100;
  const watchedPct = opts.watch.reduce((a, _, i) => a + ((w1[i].cpu_ms - w0[i].cpu_ms) / windowMs) * 100, 0);
  const out = {
    ...opts.tags,
    label: opts.label || undefined,
    url: opts.url,
    mode: opts.mode,
    connections: opts.connections,
    duration_s: Math.round(window * 1000) / 1000,
    warmup_s: opts.warmup,
    requests: st.completedInWindow,
    recorded: st.recorded,
    rps: Math.round((st.completedInWindow / window) * 10) / 10,
    latency_ms: st.latency.summary(),
    errors: st.errors,
    timeouts: st.timeouts,
    non2xx: st.non2xx,
    status: st.status,
    error_kinds: Object.keys(st.errorKinds).length ? st.errorKinds : undefined,
    reconnects: st.reconnects,
    body_bytes_per_s: Math.round(st.bytes / window),
    loader_cpu_pct: Math.round(loaderPct * 10) / 10,
    machine_cpu_pct: Math.round(machinePct * 10) / 10,
    other_cpu_pct: Math.round(Math.max(0, machinePct - loaderPct - watchedPct) * 10) / 10,
    // CPU time the hypervisor kept from this machine's virtual CPUs while they had work, in % of one core.
    steal_pct: Math.round(((m1.steal_ms - m0.steal_ms) / windowMs) * 1000) / 10,
    procs: opts.watch.length ? procs : undefined,
  };
  if (STREAM) {
    out.ttfh_ms = st.ttfh.summary();
    out.ttfb_ms = st.ttfb.summary();
    out.gap_ms = st.gap.summary();
    out.span_ms = st.span.summary();
    out.sse_events_per_response = st.recorded ? { min: st.evMin, max: st.evMax } : null;
    out.bad_stream_end = st.badStreamEnd;
  }
  out.sample = st.sample;
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
