/**
 * The rows of one statement a page at a time, in its order, without ever holding them all: an export of every group
 * (storage/query/ranked.ts) reads its next page only when the client has taken the last one.
 *
 * SQLite (tempTablePages): the statement's rows go into a temporary table in their order (rowid order), then are read
 * back by rowid, a page per statement, and the table is dropped at the end (or when the read is cancelled). SQLite keeps
 * temporary tables in a file (temp_store FILE, better-sqlite3's default) behind a small page cache: the rows sit on
 * disk, not in memory. Each statement runs whole on its own, so the connection's other reads run between two pages
 * (an open cursor would hold the connection busy for the export's length), and no read transaction stays open while
 * a client downloads.
 *
 * PostgreSQL (postgresPages, storage/read-connection.ts): a cursor in a read-only transaction on a connection of its
 * own, FETCH a page at a time; the server sorts the rows within work_mem and spills past it.
 */
import type { Pool } from 'pg';
import type { Exec } from './run';
import type { SqlQuery } from './sql';

export type Pages = (q: SqlQuery, size: number) => AsyncGenerator<Record<string, unknown>[]>;

/** Temporary tables' numbers free again: a connection's exports never share one, and the names stay few. */
const freeTables: number[] = [];
let tables = 0;

export function tempTablePages(exec: Exec): Pages {
  return async function* pages(q, size) {
    const number = freeTables.pop() ?? ++tables;
    const table = `temp.tollgate_pages_${number}`;
    try {
      await exec({ sql: `CREATE TEMP TABLE tollgate_pages_${number} AS ${q.sql}`, params: q.params });
      for (let after = 0; ;) {
        const rows = await exec({
          sql: `SELECT rowid AS page_row, * FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT ?`,
          params: [after, size],
        });
        if (rows.length === 0) return;
        after = Number(rows[rows.length - 1].page_row);
        yield rows;
        if (rows.length < size) return;
      }
    } finally {
      await exec({ sql: `DROP TABLE IF EXISTS ${table}`, params: [] }).catch(() => undefined);
      freeTables.push(number);
    }
  };
}

/** A connection lost mid-read makes the checked-out client emit 'error': heard here, the client is discarded. */
export function postgresPages(pool: Pool, mapError: (err: unknown) => unknown): Pages {
  return async function* pages(q, size) {
    const c = await pool.connect();
    let broken: Error | undefined;
    const discard = (err: Error) => (broken ??= err);
    c.on('error', discard);
    const query = async (text: string, values: unknown[] = []) => {
      try {
        return (await c.query(text, values)).rows as Record<string, unknown>[];
      } catch (err) {
        throw mapError(err);
      }
    };
    let open = false;
    try {
      await query('BEGIN READ ONLY');
      open = true;
      // Every row is read: plan for the whole result, not (the cursor default) for its first tenth, which picks a
      // plan that made every customer and model of a year at 10M records read in 24.8 s instead of 9.8.
      await query('SET LOCAL cursor_tuple_fraction = 1');
      await query(`DECLARE tollgate_pages NO SCROLL CURSOR FOR ${q.sql}`, q.params as unknown[]);
      for (;;) {
        const rows = await query(`FETCH ${Math.floor(size)} FROM tollgate_pages`);
        if (rows.length === 0) break;
        yield rows;
        if (rows.length < size) break;
      }
      await query('COMMIT');
      open = false;
    } catch (err) {
      broken ??= err as Error;
      throw err;
    } finally {
      // Cancelled between two pages: the cursor and its transaction end here.
      if (open && !broken) await c.query('ROLLBACK').catch((err: Error) => (broken = err));
      c.off('error', discard);
      c.release(broken);
    }
  };
}
