import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { request, type Dispatcher } from 'undici';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { parseConfig } from '../../config/load';
import { createLogger } from '../../runtime/logger';
import { startGateway, type RunningGateway } from '../../runtime/servers';
import { registerGateway, rememberGeneratedKeys, snapshotAdmin } from './secret-scan';
import type { TestUpstream } from './upstream';

export const TEST_ADMIN_TOKEN = 'test-admin-token-PLANTED-SECRET-0003';
export const TEST_GATEWAY_KEY = 'tg_test_key_for_the_default_workspace_0000000001';
/** Recognisable fake provider keys: the secret scans look for these in logs and stores. */
export const OPENAI_KEY = 'sk-test-openai-PLANTED-SECRET-0001';
export const ANTHROPIC_KEY = 'sk-ant-test-PLANTED-SECRET-0002';

export interface TestGateway extends RunningGateway {
  key: string;
  /** Every log line the gateway wrote, as text. */
  logs: string[];
  dataDir: string;
}

/** The default workspace with the test key and the given limits (YAML flow style, e.g. `{ max_tokens: 100 }`). */
export const workspaceWith = (limits: string): string => `
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: ${limits}
`;

/** Provider base URLs pointing at the test upstream, one mount per provider. */
export function providerBlock(upstreamUrl: string): string {
  return `
providers:
  openai: { base_url: "${upstreamUrl}/openai/v1" }
  anthropic: { base_url: "${upstreamUrl}/anthropic/v1" }
  perplexity: { base_url: "${upstreamUrl}/perplexity" }
  openrouter: { base_url: "${upstreamUrl}/openrouter/api/v1" }
  mistral:
    type: openai-compatible
    base_url: "${upstreamUrl}/mistral/v1"
    prefixes: [mistral-, codestral-]
`;
}

/**
 * Starts a real gateway on a random loopback port from YAML text (through the real config loader), with its
 * providers pointed at the test upstream and its logs captured.
 */
export async function startTestGateway(
  upstreamUrl: string,
  extraYaml = '',
  env: NodeJS.ProcessEnv = {},
): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const yaml = `
server: { host: 127.0.0.1, port: 0, shutdown_grace_ms: 5000, upload_spool_dir: "${dataDir}/uploads" }
admin: { host: 127.0.0.1, port: 0, token: "${TEST_ADMIN_TOKEN}" }
storage: { url: "sqlite:${dataDir}/tollgate.db" }
plugins:
  - use: auth
  - use: header-strip
  - use: attribution
  - use: required-tags
  - use: max-tokens
  - use: concurrency
  - use: rate-limit
  - use: budget
  - use: usage-recorder
    options: { flush_interval_ms: 20, spill_path: "${dataDir}/spill.jsonl" }
workspaces:
  - id: default
    keys:
      - { id: test, key: "\${GATEWAY_KEY}" }
${providerBlock(upstreamUrl)}`;
  const merged = stringifyYaml(deepMerge(parseYaml(yaml), parseYaml(extraYaml) ?? {}));
  const config = parseConfig(merged, { GATEWAY_KEY: TEST_GATEWAY_KEY, ...env }, 'test config');
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  const logger = createLogger('info', sink);
  // A first start without any key creates one and announces it once: that key is a secret for the scan too.
  const announce = (message: string) => void rememberGeneratedKeys(message, 'the key a first start created');
  // The OTEL_* variables come from `env` only: the machine's own never turn tracing on in a test.
  const running = await startGateway(
    { config, path: join(dataDir, 'gateway.config.yaml'), dir: dataDir },
    { logger, announce, env },
  );
  // Registered for the suite-wide secret scan (helpers/root-hooks.ts): its admin answers are read before it stops.
  const scan = registerGateway({
    kind: 'in-process',
    logs: () => logs,
    dataDir,
    adminUrl: running.adminUrl,
    proxyUrl: running.url,
  });
  const stop = async () => {
    await snapshotAdmin(scan, config.admin.token ?? TEST_ADMIN_TOKEN);
    await running.stop();
  };
  return { ...running, stop, key: TEST_GATEWAY_KEY, logs, dataDir };
}

/** Objects merge key by key; anything else (arrays included) is replaced by the override. */
function deepMerge(base: any, override: any): any {
  if (!isObject(base) || !isObject(override)) return override;
  const out = { ...base };
  for (const [k, v] of Object.entries(override)) out[k] = k in base ? deepMerge(base[k], v) : v;
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Mocha hooks shared by the integration suites: start the test upstream and a gateway in front of it once,
 * clear what the upstream recorded before each test, stop both at the end. `extraYaml` may be a function of the
 * upstream's URL (known once it started), for providers of the test's own.
 */
export function useGateway(
  upstream: TestUpstream,
  set: (gw: TestGateway) => void,
  extraYaml: string | ((upstreamUrl: string) => string) = '',
): void {
  let gw: TestGateway | undefined;
  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url, typeof extraYaml === 'function' ? extraYaml(upstream.url) : extraYaml);
    set(gw);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  beforeEach(() => upstream.reset());
}

/**
 * Mocha hooks for suites that start a gateway of their own in each test (`current` returns it): the test upstream
 * runs for the whole suite; after each test that gateway is stopped and what the upstream recorded is cleared.
 */
export function useGatewayPerTest(upstream: TestUpstream, current: () => TestGateway | undefined): void {
  before(() => upstream.start());
  after(() => upstream.stop());
  afterEach(async () => {
    await current()?.stop();
    upstream.reset();
  });
}

/** The official OpenAI client pointed at the gateway with the test keys; no retries, so a test sees every answer. */
export function openaiClient(gw: { url: string; key: string }): OpenAI {
  return new OpenAI({
    apiKey: OPENAI_KEY,
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { 'X-Gateway-Key': gw.key },
  });
}

/**
 * A chat completion ("hi" to gpt-4o-mini) through the gateway with the test keys, on the wire as sent;
 * `headers` and `body` add to or replace what it sends.
 */
export function chatThrough(
  gw: { url: string; key: string },
  headers: Record<string, string> = {},
  body: Record<string, unknown> = {},
): Promise<Dispatcher.ResponseData> {
  return request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-key': gw.key,
      authorization: `Bearer ${OPENAI_KEY}`,
      ...headers,
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}
