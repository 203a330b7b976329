#!/usr/bin/env node
// The "bare proxy": the practical floor for a Node reverse proxy on this machine. node:http in, one undici
// Pool out (keep-alive), request and response bodies streamed byte for byte, hop-by-hop headers dropped,
// no parsing, no auth, no logging, no records. Tollgate is measured against it.
//   PORT=18901 UPSTREAM=http://127.0.0.1:18080 node bench/bare-proxy.mjs
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';

const PORT = Number(process.env.PORT || 18901);
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

const server = http.createServer(async (req, res) => {
  try {
    const up = await pool.request({
      path: req.url,
      method: req.method,
      headers: strip(req.headers),
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : req,
    });
    res.writeHead(up.statusCode, strip(up.headers));
    await pipeline(up.body, res);
  } catch (err) {
    if (res.headersSent) return void res.destroy();
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `upstream error: ${err.message}` } }));
  }
});
server.keepAliveTimeout = 65_000;
server.listen(PORT, '127.0.0.1', () => console.log(`bare proxy on 127.0.0.1:${PORT} -> ${upstream.origin}`));
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
