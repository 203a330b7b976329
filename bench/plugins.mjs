#!/usr/bin/env node
// CPU cost of each plugin of the benchmark's configuration (bench/tollgate.bench.yaml), hook by hook, without
// HTTP: the gateway is built in-process from the YAML, and each plugin's hooks run on a request context shaped like
// the benchmark's (gateway key, three tags, chat body, a JSON answer with usage). Reports the best of 7 rounds in
// µs per request, so that a change to one plugin can be measured on its own (`npm run bench:plugins`).
//   node bench/plugins.mjs [--rounds 7] [--requests 10000] [--only auth,budget]
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { loadConfigFile } = require(join(ROOT, 'dist/config/load.js'));
const { createGateway } = require(join(ROOT, 'dist/runtime/gateway.js'));
const { GatewayContext } = require(join(ROOT, 'dist/core/context.js'));
const { endpointFor } = require(join(ROOT, 'dist/core/endpoints.js'));
const { newRequestId } = require(join(ROOT, 'dist/core/request-id.js'));
const pino = require('pino');

const argv = process.argv.slice(2);
const value = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(value('--rounds', 7));
const REQUESTS = Number(value('--requests', 10_000));
const ONLY = value('--only', '')?.split(',').filter(Boolean);

const dir = mkdtempSync(join(tmpdir(), 'tollgate-plugins-'));
const KEY = 'tg_bench_plugins_key_000000000000000000000001';
const env = { ...process.env, BENCH_PORT: '1', BENCH_DATA: dir, MOCK_URL: 'http://127.0.0.1:9', GATEWAY_KEY: KEY };
copyFileSync(join(HERE, 'tollgate.bench.yaml'), join(dir, 'gateway.config.yaml'));
const loaded = loadConfigFile(join(dir, 'gateway.config.yaml'), env);
// The records of the loop are written like any others; the queue may hold them all (no spill file in the figures).
for (const p of loaded.config.plugins)
  if (p.use === 'usage-recorder') p.options = { ...p.options, max_in_memory: 10_000_000, batch_size: 500 };
const logger = pino({ level: 'warn' }, pino.destination({ dest: '/dev/null', sync: true }));
const gw = await createGateway(loaded, { logger });

const endpoint = endpointFor('POST', '/v1/chat/completions');
const headers = {
  host: '127.0.0.1',
  'content-type': 'application/json',
  'x-gateway-key': KEY,
  authorization: 'Bearer sk-bench',
  'x-gateway-metadata': '{"agent":"bench","feature":"load-test"}',
  'x-gateway-metadata-customer-id': 'acme',
};
const rawHeaders = Object.entries(headers).flat();
const body = readFileSync(join(HERE, 'bodies', 'chat.json'));
const answer = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 42, completion_tokens: 48, total_tokens: 90 },
  }),
);
const proxy = gw.proxy;
const { pipeline } = proxy.deps;
const setup = pipeline.plugins.filter((p) => p.name === 'auth' || p.name === 'attribution');

/** One request through one plugin's hooks (auth and attribution set the context up first, outside the timing). */
async function once(plugin) {
  const ctx = new GatewayContext(
    newRequestId(),
    'POST',
    endpoint.path,
    endpoint,
    headers,
    logger,
    proxy.secretHeaders,
    rawHeaders,
  );
  ctx.body = body;
  ctx.bodySize = body.length;
  ctx.json = JSON.parse(body);
  ctx.model = ctx.json.model;
  for (const p of setup) if (p !== plugin) p.onRequest(ctx);
  const t0 = process.hrtime.bigint();
  if (plugin.onRequest) await plugin.onRequest(ctx);
  ctx.provider = gw.providers.resolve(endpoint, undefined, ctx.model);
  if (plugin.beforeUpstream) await plugin.beforeUpstream(ctx);
  ctx.upstreamSentMs = 0.2;
  ctx.status = 200;
  ctx.ttfbMs = 0.8;
  ctx.upstreamDoneMs = 0.85;
  ctx.responseBody = answer;
  ctx.usage = { inputTokens: 42, outputTokens: 48 };
  if (plugin.onResponse) await plugin.onResponse(ctx);
  ctx.latencyMs = 1;
  if (plugin.onComplete) await plugin.onComplete(ctx);
  return Number(process.hrtime.bigint() - t0);
}

console.log(`plugin hooks per request (µs, best of ${ROUNDS} rounds of ${REQUESTS}), ${process.version}`);
let total = 0;
for (const plugin of pipeline.plugins) {
  if (ONLY?.length && !ONLY.includes(plugin.name)) continue;
  for (let i = 0; i < REQUESTS; i++) await once(plugin); // warm-up
  let best = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    let ns = 0;
    for (let i = 0; i < REQUESTS; i++) ns += await once(plugin);
    best = Math.min(best, ns / REQUESTS / 1000);
  }
  total += best;
  console.log(`  ${plugin.name.padEnd(16)} ${best.toFixed(2).padStart(6)}`);
}
console.log(`  ${'all'.padEnd(16)} ${total.toFixed(2).padStart(6)}`);
await gw.close(100);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
