/** The pg Pool of a PostgreSQL store, and the read pool of the admin API (storage/read-connection.ts). */
import type { Pool, PoolClient } from 'pg';
import type { StorageLogger } from './store';

export interface PostgresPoolOptions {
  size: number;
  connectTimeoutMs: number;
  schema?: string;
  /** Further server settings of every connection, e.g. { statement_timeout: '10000' }. */
  settings?: Record<string, string>;
  logger?: StorageLogger;
}

export function postgresPool(url: string, opts: PostgresPoolOptions): Pool {
  // pg is loaded here, on first use: SQLite deployments need not load it (~2 MiB of resident memory at start).
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, see above
  const { Pool } = require('pg') as typeof import('pg');
  // JIT compilation pays off for queries that run for seconds; the dashboard's run for tens to hundreds of ms,
  // and a compile (tens of ms) only adds to them.
  const settings: Record<string, string> = {
    jit: 'off',
    ...(opts.schema ? { search_path: opts.schema } : {}),
    ...opts.settings,
  };
  const pool = new Pool({
    connectionString: url,
    max: opts.size,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    options: Object.entries(settings)
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(' '),
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', (err) => opts.logger?.warn({ err }, 'postgres idle client error'));
  return pool;
}

/**
 * Runs `fn` on a client of `pool`, then releases it; discarded instead when it broke. A connection lost while the
 * client is checked out makes it emit 'error', and the pool listens only to idle clients: unheard, that event
 * would crash the process. The pending query rejects anyway; the client is discarded, as when `fn` calls `discard`.
 */
export async function withClient<T>(
  pool: Pool,
  fn: (c: PoolClient, discard: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const c = await pool.connect();
  let broken: Error | undefined;
  const discard = (err: Error) => (broken ??= err);
  c.on('error', discard);
  try {
    return await fn(c, discard);
  } finally {
    c.off('error', discard);
    c.release(broken);
  }
}
