import { readdirSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { Agent, request } from 'undici';
import {
  ANTHROPIC_KEY,
  OPENAI_KEY,
  startTestGateway,
  TEST_ADMIN_TOKEN,
  TEST_GATEWAY_KEY,
  type TestGateway,
} from './gateway';
import type { UsageStore } from '../../storage/store';
import { knownSecrets } from './secret-scan';
import { sleep } from './wait';

/**
 * Shared pieces of the reliability suites (test/reliability): planted secrets and the scan for them, admin
 * reads that are kept for that scan, a load runner, raw-socket exchanges, heap measurement.
 */

/** A wrong gateway key the suites send on purpose; it is a secret too (a guess must not be logged). */
export const WRONG_GATEWAY_KEY = 'tg_wrong_key_PLANTED-SECRET-0005';
export const OPENROUTER_KEY = 'sk-or-v1-PLANTED-SECRET-0006';
/** Everything that must never appear in a log line, a stored record or an admin answer. */
export const PLANTED_SECRETS = [
  OPENAI_KEY,
  ANTHROPIC_KEY,
  OPENROUTER_KEY,
  TEST_GATEWAY_KEY,
  TEST_ADMIN_TOKEN,
  WRONG_GATEWAY_KEY,
  'PLANTED-SECRET',
];

/** Every admin API answer a reliability suite read, per gateway, for the secret scan. */
const adminAnswers = new WeakMap<TestGateway, string[]>();

/** Starts a test gateway (see helpers/gateway.ts) whose admin answers are kept for the secret scan. */
export async function startGateway(
  upstreamUrl: string,
  extraYaml = '',
  env: NodeJS.ProcessEnv = {},
): Promise<TestGateway> {
  const gw = await startTestGateway(upstreamUrl, extraYaml, env);
  adminAnswers.set(gw, []);
  return gw;
}

/** GET on the admin API; the raw answer is kept for the secret scan. */
export async function admin(
  gw: TestGateway,
  path: string,
  token: string | undefined = TEST_ADMIN_TOKEN,
): Promise<{ status: number; text: string; json: any }> {
  const res = await request(`${gw.adminUrl}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await res.body.text();
  adminAnswers.get(gw)?.push(text);
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, text, json };
}

/** Records stored so far, counted by the admin API (/api/usage total). */
export async function recordCount(gw: TestGateway, query = ''): Promise<number> {
  const res = await admin(gw, `/api/usage${query}`);
  expect(res.status, res.text).to.equal(200);
  return res.json.total?.requests ?? 0;
}

/** Waits until the store holds at least `n` records (or the time is up); returns the count seen last. */
export async function waitForCount(gw: TestGateway, n: number, timeoutMs = 10_000, query = ''): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = await recordCount(gw, query);
    if (c >= n || Date.now() > deadline) return c;
    await sleep(25);
  }
}

/** The record count once the batched writer has caught up (unchanged for `quietMs`). */
export async function settledCount(gw: TestGateway, quietMs = 150): Promise<number> {
  let last = await recordCount(gw);
  for (;;) {
    await sleep(quietMs);
    const now = await recordCount(gw);
    if (now === last) return now;
    last = now;
  }
}

/** Every stored record, through the admin API (all pages). */
export async function allRecords(gw: TestGateway): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const res = await admin(gw, `/api/requests?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status, res.text).to.equal(200);
    out.push(...res.json.data);
    cursor = res.json.next_cursor;
  } while (cursor);
  return out;
}

/** The ids of every record in a store, read directly (all pages). */
export async function storedIds(store: UsageStore): Promise<Set<string>> {
  const out = new Set<string>();
  let cursor: string | null = null;
  do {
    const page = await store.listRequests({ from: 0, to: Date.now() + 60_000, limit: 1000, cursor });
    for (const r of page.records) out.add(r.id);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** The stored records of these request ids, waiting for the batched writer (throws naming the missing ones). */
export async function recordsFor(gw: TestGateway, ids: string[], timeoutMs = 5000): Promise<Map<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const byId = new Map((await allRecords(gw)).map((r) => [r.id, r]));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length === 0) return new Map(ids.map((id) => [id, byId.get(id)]));
    if (Date.now() > deadline)
      throw new Error(`no usage record for ${missing.length} request(s): ${missing.slice(0, 5).join(', ')}`);
    await sleep(25);
  }
}

/** Fails when any of the texts holds a planted secret (or a gateway key created so far in the run). */
export function expectNoSecretsIn(texts: readonly string[], what: string): void {
  const list = [...new Set([...PLANTED_SECRETS, ...knownSecrets()])];
  for (const text of texts) {
    for (const secret of list) {
      if (text.includes(secret))
        expect.fail(`a ${what} contains the planted secret ${secret.slice(0, 12)}...: ${text.slice(0, 300)}`);
    }
  }
}

/**
 * The secret scan: every log line of the gateway, every record in its store and every admin answer the suite
 * read (plus any `extra` text, e.g. client-visible bodies) must be free of the planted secrets.
 */
export async function expectNoSecrets(
  gw: TestGateway,
  extra: string[] = [],
): Promise<{ logLines: number; records: number; adminAnswers: number; files: number }> {
  const records = await allRecords(gw);
  const answers = adminAnswers.get(gw) ?? [];
  // Files at rest too: the SQLite database and its WAL, the spill and quarantine files.
  const files = readdirSync(gw.dataDir)
    .map((f) => join(gw.dataDir, f))
    .filter((f) => statSync(f).isFile())
    .map((f) => readFileSync(f).toString('latin1'));
  const sources: [string, string[]][] = [
    ['log line', gw.logs],
    ['stored record', records.map((r) => JSON.stringify(r))],
    ['admin answer', answers],
    ['client-visible text', extra],
    ['file in the data folder', files],
  ];
  for (const [what, texts] of sources) expectNoSecretsIn(texts, what);
  return { logLines: gw.logs.length, records: records.length, adminAnswers: answers.length, files: files.length };
}

// ---------------------------------------------------------------- HTTP calls

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  json: any;
  ms: number;
  /** Set when the response started but its body failed (a cut stream). */
  bodyError?: Error;
}

export const jsonHeaders = (
  gw: Pick<TestGateway, 'key'>,
  extra: Record<string, string> = {},
): Record<string, string> => ({
  'content-type': 'application/json',
  'x-gateway-key': gw.key,
  authorization: `Bearer ${OPENAI_KEY}`,
  ...extra,
});

export const chatBody = (extra: object = {}) =>
  JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });
export const streamBody = (extra: object = {}) =>
  chatBody({ stream: true, stream_options: { include_usage: true }, ...extra });

/** POST (by default) through the gateway; never throws on a cut body (see bodyError). */
export async function call(
  gw: Pick<TestGateway, 'url' | 'key'>,
  path: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    signal?: AbortSignal;
    dispatcher?: Agent;
  } = {},
): Promise<CallResult> {
  const started = performance.now();
  const res = await request(gw.url + path, {
    method: (init.method ?? 'POST') as 'POST',
    headers: init.headers ?? jsonHeaders(gw),
    body: init.body,
    signal: init.signal,
    dispatcher: init.dispatcher,
  });
  const chunks: Buffer[] = [];
  let bodyError: Error | undefined;
  try {
    for await (const c of res.body) chunks.push(c as Buffer);
  } catch (err) {
    bodyError = err as Error;
  }
  const body = Buffer.concat(chunks);
  const text = body.toString('utf8');
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text, json, ms: performance.now() - started, bodyError };
}

/** Asserts the gateway's own error shape with a stable code. */
export function expectGatewayError(
  res: { status: number; json: any; text: string; headers: Record<string, unknown> },
  status: number,
  code: string,
): void {
  expect(res.status, res.text.slice(0, 300)).to.equal(status);
  expect(res.json?.error?.code, res.text.slice(0, 300)).to.equal(code);
  expect(res.json.error).to.have.all.keys('message', 'type', 'param', 'code');
  expect(res.headers['x-gateway-request-id']).to.be.a('string');
}

// ---------------------------------------------------------------- load

/** Runs `n` jobs with at most `concurrency` at once; job i gets its index. */
export async function runPool<T>(n: number, concurrency: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= n) return;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------- memory

let gcFn: (() => void) | undefined;
/** A full garbage collection (exposed at run time; mocha runs without --expose-gc). */
export function forceGc(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
  gcFn();
}

/** Heap in use after a full collection, MB. */
export async function settledHeapMb(): Promise<number> {
  await sleep(50);
  forceGc();
  await sleep(20);
  forceGc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

// ---------------------------------------------------------------- raw sockets

export interface RawExchange {
  /** Everything the server sent. */
  raw: Buffer;
  /** How the exchange ended: the server closed, or our deadline passed (we closed). */
  end: 'closed' | 'timeout' | 'error';
  responses: ParsedResponse[];
  /** Bytes after the last complete response that do not form one (must be empty for a well-formed answer). */
  trailing: Buffer;
  /** The request was HEAD (its answer has headers only). */
  head: boolean;
}

export interface ParsedResponse {
  status: number;
  reason: string;
  headers: [string, string][];
  body: Buffer;
}

/**
 * Writes `bytes` to the server as they are (no client normalisation) and collects the answer until the server
 * closes or `timeoutMs` passes. `chunks` may be given to send pieces with a pause between them.
 */
export function rawExchange(
  baseUrl: string,
  bytes: Buffer | Buffer[],
  timeoutMs = 3000,
  pauseMs = 0,
  localAddress?: string,
): Promise<RawExchange> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect({ port: Number(port), host: hostname, localAddress });
    const chunks: Buffer[] = [];
    let end: RawExchange['end'] = 'closed';
    const timer = setTimeout(() => {
      end = 'timeout';
      socket.destroy();
    }, timeoutMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {
      if (end === 'closed') end = 'error';
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const { responses, rest } = parseResponses(raw, isHead);
      resolve({ raw, end, responses, trailing: rest, head: isHead });
    });
    const parts = Array.isArray(bytes) ? bytes : [bytes];
    const isHead = parts[0]?.subarray(0, 5).toString('latin1') === 'HEAD ';
    void (async () => {
      for (const [i, part] of parts.entries()) {
        if (socket.destroyed) return;
        if (i > 0 && pauseMs) await sleep(pauseMs);
        socket.write(part);
      }
    })();
  });
}

/** Parses HTTP/1.1 responses strictly: status line, header lines, body by content-length or chunked framing. */
export function parseResponses(raw: Buffer, toHead = false): { responses: ParsedResponse[]; rest: Buffer } {
  const responses: ParsedResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = raw.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const lines = raw.subarray(at, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) ([^\r\n]*)$/.exec(lines[0]);
    if (!m) break;
    const headers: [string, string][] = [];
    let ok = true;
    for (const line of lines.slice(1)) {
      const hm = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/.exec(line);
      if (!hm) {
        ok = false;
        break;
      }
      headers.push([hm[1].toLowerCase(), hm[2]]);
    }
    if (!ok) break;
    const get = (n: string) => headers.find(([k]) => k === n)?.[1];
    let pos = headEnd + 4;
    let body: Buffer;
    const status = Number(m[1]);
    if (toHead) {
      body = Buffer.alloc(0); // an answer to HEAD has headers only, whatever they announce
    } else if (get('transfer-encoding')?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      let complete = false;
      for (;;) {
        const lineEnd = raw.indexOf('\r\n', pos);
        if (lineEnd < 0) break;
        const size = Number.parseInt(raw.subarray(pos, lineEnd).toString('latin1').split(';')[0], 16);
        if (!Number.isFinite(size)) break;
        pos = lineEnd + 2;
        if (size === 0) {
          const trailerEnd = raw.indexOf('\r\n', pos);
          if (trailerEnd !== pos) break; // no trailers are expected
          pos += 2;
          complete = true;
          break;
        }
        if (raw.length < pos + size + 2) break;
        parts.push(raw.subarray(pos, pos + size));
        pos += size + 2;
      }
      if (!complete) break;
      body = Buffer.concat(parts);
    } else if (get('content-length') !== undefined) {
      const len = Number(get('content-length'));
      if (!Number.isSafeInteger(len) || raw.length < pos + len) break;
      body = raw.subarray(pos, pos + len);
      pos += len;
    } else if (status === 204 || status === 304 || (status >= 100 && status < 200)) {
      body = Buffer.alloc(0);
    } else {
      // Delimited by close.
      body = raw.subarray(pos);
      pos = raw.length;
    }
    responses.push({ status, reason: m[2], headers, body });
    at = pos;
  }
  return { responses, rest: raw.subarray(at) };
}

// ---------------------------------------------------------------- well-formed answers

/**
 * Status codes Node's HTTP server answers with itself (before any gateway code runs), always without a body:
 * parser errors, and 417 for an Expect header other than 100-continue.
 */
export const PARSER_STATUSES = [400, 408, 413, 414, 417, 431, 501, 505];

/**
 * Asserts that an exchange got exactly one well-formed HTTP response and nothing else: either the gateway's own
 * error shape with a stable code (status matching the code), an upstream answer passed through (2xx here), or
 * Node's parser refusing the bytes (status line and headers only, connection closed).
 */
export function expectWellFormed(
  ex: RawExchange,
  label: string,
  errorCodes: Record<string, { status: number }>,
): ParsedResponse {
  const what = `${label}\n  got: ${JSON.stringify(ex.raw.subarray(0, 400).toString('latin1'))}`;
  expect(ex.end, `${label}: no answer before the deadline`).to.not.equal('timeout');
  const final = ex.responses.filter((x) => x.status >= 200); // 100 Continue may come first
  expect(final.length, `one response: ${what}`).to.equal(1);
  expect(ex.trailing.length, `bytes after the response: ${what}`).to.equal(0);
  const r = final[0];
  const header = (n: string) => r.headers.find(([k]) => k === n)?.[1];
  if (header('x-gateway-request-id') === undefined) {
    // Only Node's parser answers without a request id: a bare status line, no body.
    expect(PARSER_STATUSES, `parser status: ${what}`).to.include(r.status);
    expect(r.body.length, what).to.equal(0);
    return r;
  }
  if (r.status >= 400 && r.body.length === 0) {
    expect(ex.head, `an error without its body is only an answer to HEAD: ${what}`).to.equal(true);
    expect(header('content-type'), what).to.match(/json/);
  } else if (r.status >= 400) {
    const body = JSON.parse(r.body.toString('utf8'));
    expect(body.error, what).to.have.all.keys('message', 'type', 'param', 'code');
    expect(errorCodes[body.error.code], `known code ${body.error.code}: ${what}`).to.not.equal(undefined);
    expect(errorCodes[body.error.code].status, what).to.equal(r.status);
  } else {
    expect(r.status, what).to.be.within(200, 299);
  }
  return r;
}
