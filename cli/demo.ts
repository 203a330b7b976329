/**
 * `tollgate demo`: a throw-away gateway filled with realistic usage, to look at the dashboard.
 *
 * Everything goes through the real pipeline: a loopback mock provider (cli/demo-upstream.ts) answers in
 * the providers' wire formats, and thousands of real HTTP requests with varied agents, features, customers,
 * models and gateway keys are sent through the gateway's proxy, which authenticates, routes, parses usage,
 * prices and records them like any other. Only the clock is simulated while seeding (Date.now is moved along
 * the generated request times), so that the records spread over the past days instead of the last minute.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { request } from 'undici';
import { parseConfig } from '../config/load';
import { createLogger } from '../runtime/logger';
import { startGateway, type RunningGateway } from '../runtime/servers';
import { createGatewayKey } from '../admin/key-admin';
import {
  AGENTS,
  CUSTOMER_WEIGHTS,
  DAY,
  PROVIDER_KEY,
  logUniform,
  pick,
  requestTimes,
  rng,
  type AgentProfile,
} from './demo-traffic';
import { DemoUpstream } from './demo-upstream';
import { listenFailure } from './errors';
import { count } from './format';
import { wholeNumber } from './number-option';
import { startProgress } from './progress';

export interface DemoOptions {
  /** Requests to send through the proxy (default 5000). */
  requests?: number;
  /** Spread over this many days before now (default 14). */
  days?: number;
  /** Admin listener port (default 0: any free port). */
  adminPort?: number;
  /** Proxy listener port (default 0). */
  port?: number;
  /** Admin token (default: a random one). */
  token?: string;
  seed?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Called after each request with the count sent so far and the total. */
  onProgress?: (sent: number, total: number) => void;
}

export interface RunningDemo {
  running: RunningGateway;
  adminUrl: string;
  proxyUrl: string;
  token: string;
  sent: number;
  stop(): Promise<void>;
}

export async function startDemo(opts: DemoOptions = {}): Promise<RunningDemo> {
  const count = opts.requests ?? 5000;
  const days = opts.days ?? 14;
  // requestTimes trims its list down to `count`: a negative count would never get there.
  if (!Number.isSafeInteger(count) || count < 0)
    throw new RangeError(`requests must be a whole number >= 0, got ${count}`);
  if (!(days > 0)) throw new RangeError(`days must be > 0, got ${days}`);
  const r = rng(opts.seed ?? 42);
  const token = opts.token ?? `demo-${randomBytes(12).toString('hex')}`;
  const demoKey = `tg_demo_${randomBytes(16).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
  const upstream = new DemoUpstream();
  const up = await upstream.start();
  const config = parseConfig(
    demoYaml(opts, dataDir, up),
    { DEMO_ADMIN_TOKEN: token, DEMO_GATEWAY_KEY: demoKey },
    'demo config',
  );
  const running = await startGateway(
    { config, path: join(dataDir, 'gateway.config.yaml'), dir: dataDir },
    { logger: createLogger('warn'), announce: () => {} },
  );
  const cleanup = async () => {
    await running.stop();
    await upstream.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    const { store } = running.gateway;
    const { keys, old } = await createDemoKeys(running, config.workspaces);
    keys.demo = demoKey;
    const now = Date.now();
    const sent = await sendDemoTraffic(running.url, r, requestTimes(r, count, days, now), keys, opts);
    await store.revokeKey(old, now - 3 * DAY);
    await running.gateway.keySync.refresh();
    await waitUntilStored(store, sent);
    return { running, adminUrl: running.adminUrl!, proxyUrl: running.url, token, sent, stop: cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

function demoYaml(opts: DemoOptions, dataDir: string, up: string): string {
  return `
server: { host: 127.0.0.1, port: ${opts.port ?? 0} }
admin: { host: 127.0.0.1, port: ${opts.adminPort ?? 0}, token: "\${DEMO_ADMIN_TOKEN}" }
logging: { level: warn }
storage: { url: "sqlite:${dataDir}/tollgate.db" }
plugins:
  - use: auth
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options: { flush_interval_ms: 50, spill_path: "${dataDir}/spill.jsonl" }
workspaces:
  - id: default
    name: Demo workspace
    keys:
      - { id: demo, label: demo client, key: "\${DEMO_GATEWAY_KEY}" }
providers:
  openai: { base_url: "${up}/openai/v1" }
  anthropic: { base_url: "${up}/anthropic/v1" }
  perplexity: { enabled: false }
  openrouter: { enabled: false }
  gemini: { type: openai-compatible, display_name: Google Gemini, base_url: "${up}/gemini", prefixes: [gemini-] }
  mistral: { type: openai-compatible, display_name: Mistral, base_url: "${up}/mistral/v1", prefixes: [mistral-] }
`;
}

/** Gateway keys as a team would have them: one per group of agents, plus one to revoke (its id in `old`). */
async function createDemoKeys(
  running: RunningGateway,
  workspaces: Parameters<typeof createGatewayKey>[1],
): Promise<{ keys: Record<string, string>; old: string }> {
  const { store } = running.gateway;
  const keys: Record<string, string> = {};
  for (const [name, label] of [
    ['support', 'support-bot (production)'],
    ['platform', 'platform agents'],
    ['growth', 'growth team'],
  ] as const) {
    keys[name] = (await createGatewayKey(store, workspaces, { label })).key;
  }
  const old = await createGatewayKey(store, workspaces, { label: 'old laptop key' });
  await running.gateway.keySync.refresh();
  return { keys, old: old.record.id };
}

/** One demo request: an agent's model, tags, token counts (told to the mock provider) and an occasional failure. */
export function demoRequest(r: () => number, i: number, keys: Record<string, string>) {
  const p = pick(
    r,
    AGENTS.map((a): [AgentProfile, number] => [a, a.weight]),
  );
  const model = pick(r, p.models);
  const tags: Record<string, string> = {
    agent: p.agent,
    feature: pick(r, p.features),
    customer_id: pick(r, CUSTOMER_WEIGHTS),
    team: p.team,
  };
  if (r() < 0.08) tags.env = 'staging';
  const inputAll = logUniform(r, p.input[0], p.input[1]);
  const cacheRead = r() < 0.6 ? Math.round(inputAll * p.cache * r() * 2) : 0;
  const input = Math.max(1, inputAll - Math.min(cacheRead, inputAll - 1));
  const output = logUniform(r, p.output[0], p.output[1]);
  const reasoning = model === 'o3' ? Math.round(output * (0.3 + 0.5 * r())) : 0;
  const failure = r() < 0.015 ? (r() < 0.7 ? 429 : 500) : 200;
  const stream = r() < 0.04 && !model.startsWith('claude-');
  const messages = model.startsWith('claude-');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-gateway-key': r() < 0.1 ? keys.demo : keys[p.key],
    'x-gateway-metadata': JSON.stringify(tags),
    'x-demo-usage': `${input},${output},${Math.min(cacheRead, inputAll - 1)},${reasoning}`,
    'x-demo-status': String(failure),
    ...(messages
      ? { 'x-api-key': PROVIDER_KEY, 'anthropic-version': '2023-06-01' }
      : { authorization: `Bearer ${PROVIDER_KEY}` }),
  };
  const content = `(${tags.feature}) request ${i}`;
  const body = messages
    ? { model, max_tokens: 4096, messages: [{ role: 'user', content }] }
    : { model, messages: [{ role: 'user', content }], ...(stream ? { stream: true } : {}) };
  return { path: messages ? '/v1/messages' : '/v1/chat/completions', headers, body: JSON.stringify(body) };
}

/**
 * Sends one request per time in `times` through the proxy, four at a time, with Date.now moved to each request's
 * time while it is handled; answers the count sent.
 */
async function sendDemoTraffic(
  proxyUrl: string,
  r: () => number,
  times: readonly number[],
  keys: Record<string, string>,
  opts: DemoOptions,
): Promise<number> {
  const realNow = Date.now;
  let simulated: number | undefined;
  Date.now = () => simulated ?? realNow();
  let sent = 0;
  let next = 0;
  const worker = async () => {
    while (next < times.length) {
      const i = next++;
      const { path, headers, body } = demoRequest(r, i, keys);
      simulated = times[i];
      const res = await request(`${proxyUrl}${path}`, { method: 'POST', headers, body });
      await res.body.text();
      sent++;
      opts.onProgress?.(sent, times.length);
      if (sent % 1000 === 0) opts.log?.(`  ${sent} / ${times.length} requests sent`);
    }
  };
  try {
    await Promise.all(Array.from({ length: 4 }, worker));
  } finally {
    Date.now = realNow;
  }
  return sent;
}

/** Every request is recorded (failures too): waits until the batched writer has stored them all. */
async function waitUntilStored(store: RunningGateway['gateway']['store'], sent: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [total] = await store.queryUsage({ from: 0, to: Number.MAX_SAFE_INTEGER, groupBy: [] });
    if ((total?.requests ?? 0) >= sent) return;
    if (Date.now() > deadline) throw new Error(`only ${total?.requests ?? 0} of ${sent} demo records were stored`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** More would take long through one loopback gateway and prove nothing more on the dashboard. */
const MAX_DEMO_REQUESTS = 1_000_000;

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'start a throw-away gateway filled with realistic demo usage (through a loopback mock provider) to explore the dashboard',
    )
    .option('-n, --requests <n>', 'requests to send through the proxy', wholeNumber(1, MAX_DEMO_REQUESTS), 5000)
    .option('--days <n>', 'spread them over this many past days', wholeNumber(1, 365), 14)
    .option('--admin-port <port>', 'dashboard / admin API port', wholeNumber(0, 65535), 8081)
    .option('--port <port>', 'proxy port (default: any free port)', wholeNumber(0, 65535), 0)
    .action(async (o: { requests: number; days: number; adminPort: number; port: number }) => {
      const token = process.env.TOLLGATE_ADMIN_TOKEN || undefined;
      process.stderr.write(
        `Tollgate demo: sending ${count(o.requests)} requests through the gateway to a loopback mock provider...\n`,
      );
      const t0 = Date.now();
      const progress = startProgress('demo', o.requests, 'requests', { realDateNow: false });
      let demo: RunningDemo;
      try {
        demo = await startDemo({
          requests: o.requests,
          days: o.days,
          adminPort: o.adminPort,
          port: o.port,
          token,
          onProgress: (sent) => progress.update(sent),
        });
      } catch (err) {
        throw listenFailure(err);
      } finally {
        progress.stop();
      }
      // Before "Press Ctrl-C": a signal that came before its handler would end the process without the clean-up.
      const stop = () =>
        void demo.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      process.stdout.write(
        [
          '',
          `Recorded ${count(demo.sent)} requests over the past ${o.days} days in ${((Date.now() - t0) / 1000).toFixed(1)} s.`,
          '',
          `  Dashboard:    ${demo.adminUrl}/`,
          `  Admin token:  ${demo.token}${token ? ' (from TOLLGATE_ADMIN_TOKEN)' : ''}`,
          `  Proxy:        ${demo.proxyUrl} (its providers point at the mock; the data is deleted on exit)`,
          '',
          'Press Ctrl-C to stop.',
          '',
        ].join('\n'),
      );
    });
}
