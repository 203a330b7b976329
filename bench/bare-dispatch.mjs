#!/usr/bin/env node
// The "bare-dispatch" proxy: the fastest Node reverse proxy we know, as the second floor Tollgate is compared with.
// Like bench/bare-proxy.mjs (node:http in, one keep-alive undici Pool out, hop-by-hop headers dropped, no parsing,
// no auth, no logging, no records), but the upstream answer is handled through undici's dispatch() callbacks:
// chunks are written to the client as the parser hands them over (backpressure through pause/resume), with no
// Readable stream, AsyncResource or stream.pipeline per request. The request body is read whole first (as
// Tollgate does for JSON). On this project's machine that layer was most of a bare proxy's cost: ~2x the
// requests/s of bare-proxy.mjs.
//   PORT=18902 UPSTREAM=http://127.0.0.1:18080 node bench/bare-dispatch.mjs
import http from 'node:http';
import { Pool } from 'undici';

const PORT = Number(process.env.PORT || 18902);
const upstream = new URL(process.env.UPSTREAM || 'http://127.0.0.1:18080');
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 60_000, pipelining: 1 });
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'te',
  'trailer',
]);

function strip(headers) {
  const out = {};
  for (const name in headers) if (!HOP.has(name)) out[name] = headers[name];
  return out;
}

/** undici's dispatch handler: the answer goes straight to the client response. */
class Relay {
  constructor(res) {
    this.res = res;
  }
  onRequestStart(controller) {
    this.controller = controller;
    this.res.on('drain', () => controller.resume());
  }
  onResponseStart(_controller, status, headers) {
    if (status >= 200) this.res.writeHead(status, strip(headers));
  }
  onResponseData(controller, chunk) {
    if (!this.res.write(chunk)) controller.pause();
  }
  onResponseEnd() {
    this.res.end();
  }
  onResponseError(_controller, err) {
    if (this.res.headersSent) return void this.res.destroy();
    this.res.writeHead(502, { 'content-type': 'application/json' });
    this.res.end(JSON.stringify({ error: { message: `upstream error: ${err.message}` } }));
  }
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    pool.dispatch({ path: req.url, method: req.method, headers: strip(req.headers), body }, new Relay(res));
  });
});
server.keepAliveTimeout = 65_000;
server.listen(PORT, '127.0.0.1', () => console.log(`bare-dispatch proxy on 127.0.0.1:${PORT} -> ${upstream.origin}`));
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
