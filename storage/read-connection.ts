/**
 * Connections that only read, for the control plane (admin API, dashboard), opened on its reader thread
 * (storage/reader-thread.ts): SQLite's own read-only connection to the store's file (WAL lets it read while the
 * writer writes, and never blocks the writer), or PostgreSQL's own small pool whose statements the server cancels
 * past the time limit (statement_timeout), so that a long dashboard query never holds the store's write pool.
 */
import Database from 'better-sqlite3';
import { postgresDialect, sqliteDialect, type SqlDialect } from './dialect';
import { postgresPool } from './postgres-pool';
import type { Exec } from './query/run';
import { postgresPages, tempTablePages, type Pages } from './query/ranked-pages';
import { CANCELLED_CODE } from './reader-thread';
import { sqliteExec } from './sqlite-exec';

/** Where a connection of its own reaches a store's data (UsageStore.readSource). */
export type ReadSource =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string; schema?: string }
  /** An in-memory SQLite database: no other connection sees it, so its reads run on the store's own. */
  | { kind: 'inline'; dialect: SqlDialect; exec: Exec };

export interface ReadConnection {
  readonly dialect: SqlDialect;
  readonly exec: Exec;
  /** A statement's rows a page at a time (storage/query/ranked-pages.ts): the export of every group. */
  readonly pages: Pages;
  close(): Promise<void>;
}

/** Connections of the PostgreSQL read pool: the dashboard's page asks a few reads at once. */
export const READ_POOL_SIZE = 2;
/** Page cache of the SQLite read connection, KiB: grouping queries read many rollup pages. */
const READ_CACHE_KIB = 32 * 1024;
/** How the read pool's connections show in pg_stat_activity. */
export const READ_POOL_APPLICATION_NAME = 'tollgate-admin-reads';
/** PostgreSQL's code for a statement cancelled by statement_timeout (or by a cancel request). */
const PG_QUERY_CANCELED = '57014';

export function openReadConnection(
  source: Exclude<ReadSource, { kind: 'inline' }>,
  opts: { timeoutMs: number; exportsMax: number },
): ReadConnection {
  if (source.kind === 'sqlite') {
    const db = new Database(source.path, { readonly: true, fileMustExist: true });
    db.pragma(`cache_size = -${READ_CACHE_KIB}`);
    const exec = sqliteExec(db);
    return { dialect: sqliteDialect, exec, pages: tempTablePages(exec), close: async () => void db.close() };
  }
  const pool = (size: number) =>
    postgresPool(source.url, {
      size,
      // A read waits for a connection no longer than it may run: a store that is down answers store_unavailable.
      connectTimeoutMs: opts.timeoutMs,
      schema: source.schema,
      settings: {
        statement_timeout: String(Math.ceil(opts.timeoutMs)),
        default_transaction_read_only: 'on',
        application_name: READ_POOL_APPLICATION_NAME,
      },
    });
  const reads = pool(READ_POOL_SIZE);
  // An export holds its connection while its client downloads: exports have connections of their own, one each
  // (admin.exports_max bounds them), so that they never hold the dashboard's.
  const exportPool = pool(opts.exportsMax);
  const exec: Exec = async (q) => {
    try {
      return (await reads.query(q.sql, q.params as unknown[])).rows as Record<string, unknown>[];
    } catch (err) {
      throw cancelled(err);
    }
  };
  const close = async () => void (await Promise.all([reads.end(), exportPool.end()]));
  return { dialect: postgresDialect, exec, pages: postgresPages(exportPool, cancelled), close };
}

/** A statement PostgreSQL cancelled at statement_timeout, as the reader thread knows it. */
function cancelled(err: unknown): unknown {
  if ((err as { code?: unknown }).code === PG_QUERY_CANCELED)
    return Object.assign(new Error('cancelled by statement_timeout'), { code: CANCELLED_CODE });
  return err;
}
