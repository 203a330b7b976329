import { join } from 'node:path';
import { request } from 'undici';
import { parseConfig } from '../../config/load';
import { createGateway, type Gateway } from '../../runtime/gateway';
import { createLogger } from '../../runtime/logger';
import { adminGet } from '../helpers/admin';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, type TestGateway } from '../helpers/gateway';

/** Compiled examples, as a deployment would point its YAML at them. */
export const EXAMPLES_DIR = join(PROJECT_ROOT, 'dist/examples');
/** Compiled test-only plugins and provider modules (test/framework/fixtures). */
export const FIXTURES_DIR = join(PROJECT_ROOT, 'dist/test/framework/fixtures');

/**
 * A `plugins:` YAML block: the built-ins the test gateway normally runs, with `entries` inserted where
 * `at` says (default: after attribution, before usage-recorder).
 */
export function pipelineYaml(entries: string[], at: 'start' | 'beforeRecorder' | 'end' = 'beforeRecorder'): string {
  const head = ['  - use: auth', '  - use: header-strip', '  - use: attribution'];
  const recorder = ['  - use: usage-recorder', '    options: { flush_interval_ms: 20 }'];
  const extra = entries.map((e) => e.replace(/^/gm, '  '));
  const lines =
    at === 'start'
      ? [...extra, ...head, ...recorder]
      : at === 'end'
        ? [...head, ...recorder, ...extra]
        : [...head, ...extra, ...recorder];
  return `plugins:\n${lines.join('\n')}\n`;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** POST through the gateway with its key and an OpenAI key; `headers` add to or replace those (undefined drops one). */
export async function call(
  gw: TestGateway,
  path: string,
  body: object | undefined,
  headers: Record<string, string | undefined> = {},
): Promise<CallResult> {
  const all = {
    'content-type': 'application/json',
    'x-gateway-key': gw.key,
    authorization: `Bearer ${OPENAI_KEY}`,
    ...headers,
  };
  const res = await request(gw.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined)),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export const chat = (model: string, extra: object = {}) => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

/**
 * Creates a gateway from YAML text exactly as `tollgate start` does (parseConfig, then createGateway), with
 * the config file's folder at `dir` (relative `use:` paths resolve against it) and an in-memory store.
 */
export async function bootGateway(yaml: string, dir = PROJECT_ROOT): Promise<Gateway> {
  const config = parseConfig(
    `storage: { url: "sqlite::memory:" }\nworkspaces: [{ id: default, keys: [{ id: k, key: "${BOOT_KEY}" }] }]\n${yaml}`,
    {},
    'test config',
  );
  return createGateway(
    { config, path: join(dir, 'gateway.config.yaml'), dir },
    { logger: createLogger('silent'), announce: () => {} },
  );
}

/** The gateway key of bootGateway's default workspace. */
export const BOOT_KEY = 'tg_framework_boot_key_000000000000000000000001';

/** The start-up error's message for this YAML; fails the test if the gateway starts. */
export async function bootError(yaml: string, dir = PROJECT_ROOT): Promise<string> {
  let gateway: Gateway;
  try {
    gateway = await bootGateway(yaml, dir);
  } catch (err) {
    return (err as Error).message;
  }
  await gateway.close(0);
  throw new Error('the gateway started, but a start-up error was expected');
}

/** Polls until `check` returns a value (not undefined), or fails after timeoutMs. */
export async function eventually<T>(check: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The stored record of one request (admin API), once the batched writer has written it. */
export async function waitForRecord(gw: TestGateway, requestId: unknown): Promise<any> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const page = await adminGet(gw, '/api/requests?limit=1000');
    const record = page.data.find((r: any) => r.id === requestId);
    if (record) return record;
    if (Date.now() > deadline) throw new Error(`no record for request ${String(requestId)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
