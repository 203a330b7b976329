/**
 * What a suite needs from outside the test process (PostgreSQL, Redis, the redis-server binary, Chromium), and what
 * happens when it is not there. Never a silent skip:
 * - missing (no URL, no binary): a loud SKIPPED line and the suite is skipped; in CI (CI=true, as .ci/run and most
 *   CI services set) a loud FAILED line and the suite fails, so that a CI run cannot pass without them;
 * - configured but not answering (a URL nothing listens on): a loud FAILED line and the suite fails, everywhere,
 *   since the run was asked to use it.
 * Skipped suites are listed again at the end of the run (root-hooks.ts).
 */
import Redis from 'ioredis';
import { Client } from 'pg';
import { HAS_REDIS_SERVER } from './redis-server';

/** True in CI: GitHub Actions, GitLab and most others set CI=true. */
export const IN_CI = /^(true|1|yes)$/i.test(process.env.CI ?? '');

/** "suite: reason" of every suite skipped in this run. */
export const skippedSuites: string[] = [];

/** A line between two bars of "!", so that it stands out in the reporter's output. */
export function announce(line: string): void {
  const bar = '!'.repeat(Math.min(line.length, 100));
  process.stdout.write(`\n${bar}\n${line}\n${bar}\n\n`);
}

/** The suite cannot run at all: a FAILED line and an error (the hook or test calling this fails). */
export function failService(suite: string, reason: string): never {
  announce(`FAILED: ${suite}: ${reason}`);
  throw new Error(`${suite} cannot run: ${reason}`);
}

/** Something the suite needs is missing: in CI a FAILED line and an error; elsewhere a SKIPPED line, noted for the summary. */
export function missingService(suite: string, reason: string): void {
  if (IN_CI) {
    announce(`FAILED: ${suite}: ${reason}`);
    throw new Error(`${suite} cannot run in CI (CI=${process.env.CI}): ${reason}`);
  }
  announce(`SKIPPED: ${suite}: ${reason}`);
  skippedSuites.push(`${suite}: ${reason}`);
}

/** From a before hook or a test (its `this`): goes on when `available`; otherwise missingService, then skips. */
export function requireService(ctx: Mocha.Context, suite: string, available: boolean, reason: string): void {
  if (available) return;
  missingService(suite, reason);
  ctx.skip();
}

/** host:port of a service URL: enough to say which server, without a password the URL may hold. */
const where = (url: string): string => {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '(default port)'}`;
  } catch {
    return '(unparseable URL)';
  }
};

/** An error's message; connection failures to several addresses come as an AggregateError with an empty one. */
const messageOf = (err: unknown): string => {
  const e = err as Error & { code?: string; errors?: unknown[] };
  if (e?.message) return e.message;
  if (Array.isArray(e?.errors) && e.errors.length) return e.errors.map(messageOf).join('; ');
  return e?.code ?? String(err);
};

const PROBE_TIMEOUT_MS = 5_000;
const probes = new Map<string, Promise<string | undefined>>();

/** Why the server behind `url` does not answer, or undefined when it does; one probe per URL and run. */
function probe(kind: string, url: string, check: () => Promise<void>): Promise<string | undefined> {
  const key = `${kind} ${url}`;
  let p = probes.get(key);
  if (!p) {
    p = check().then(
      () => undefined,
      (err: unknown) => messageOf(err),
    );
    probes.set(key, p);
  }
  return p;
}

const postgresAnswers = (url: string) =>
  probe('postgres', url, async () => {
    const c = new Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
    c.on('error', () => undefined); // a connection lost after connect() is reported by query()
    try {
      await c.connect();
      await c.query('SELECT 1');
    } finally {
      await c.end().catch(() => undefined);
    }
  });

const redisAnswers = (url: string) =>
  probe('redis', url, async () => {
    const r = new Redis(url, {
      lazyConnect: true,
      connectTimeout: PROBE_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    // connect() rejects with "Connection is closed."; the cause (ECONNREFUSED, ...) comes as an error event.
    let cause: unknown;
    r.on('error', (err) => (cause ??= err));
    try {
      await r.connect();
      await r.ping();
    } catch (err) {
      throw cause ?? err;
    } finally {
      r.disconnect();
    }
  });

/** The URL in `variable`, once `server` answered on it; skips (or fails, see above) when it is unset or does not answer. */
async function requireServer(
  ctx: Mocha.Context,
  suite: string,
  variable: string,
  server: string,
  example: string,
  answers: (url: string) => Promise<string | undefined>,
): Promise<string> {
  const url = process.env[variable];
  requireService(ctx, suite, !!url, `${variable} is not set (e.g. ${variable}=${example})`);
  const problem = await answers(url!);
  if (problem) failService(suite, `${variable} is set but ${server} at ${where(url!)} does not answer: ${problem}`);
  return url!;
}

/** DATABASE_URL, once PostgreSQL answered on it. */
export const requirePostgres = (ctx: Mocha.Context, suite: string): Promise<string> =>
  requireServer(ctx, suite, 'DATABASE_URL', 'PostgreSQL', 'postgres://postgres@127.0.0.1:5432/test', postgresAnswers);

/** REDIS_URL, once Redis answered on it. */
export const requireRedis = (ctx: Mocha.Context, suite: string): Promise<string> =>
  requireServer(ctx, suite, 'REDIS_URL', 'Redis', 'redis://127.0.0.1:6379', redisAnswers);

/** For tests that start, stop or kill a private Redis: the redis-server binary on PATH. */
export function requireRedisServer(ctx: Mocha.Context, suite: string): void {
  requireService(
    ctx,
    suite,
    HAS_REDIS_SERVER,
    'no redis-server binary on PATH (this test starts and stops a private Redis; install the redis-server package)',
  );
}

/** Drops the PostgreSQL schema a suite worked in, once it is done (nothing to drop without DATABASE_URL). */
export async function dropPostgresSchema(schema: string): Promise<void> {
  if (!process.env.DATABASE_URL) return;
  const c = new Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}
