/**
 * Runs the shared query builders' SQL on a better-sqlite3 connection: statements prepared once per SQL text (the
 * builders emit few shapes), integers read as bigint (exact money), which the shared decoders convert.
 */
import type Database from 'better-sqlite3';
import type { Exec } from './query/run';

/** `?, ?, ?` for n values. */
export const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/** Prepared statements kept per SQL text. */
const STATEMENT_CACHE = 256;

export function sqliteExec(db: Database.Database): Exec {
  const cache = new Map<string, Database.Statement>();
  return async (q) => {
    let stmt = cache.get(q.sql);
    if (!stmt) {
      stmt = db.prepare(q.sql);
      if (stmt.reader) stmt.safeIntegers(true);
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      cache.set(q.sql, stmt);
    }
    // A statement returning no rows (a temporary table's CREATE or DROP: storage/query/ranked-pages.ts) is run.
    if (!stmt.reader) {
      stmt.run(...q.params);
      return [];
    }
    return stmt.all(...q.params) as Record<string, unknown>[];
  };
}
