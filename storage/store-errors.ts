/**
 * Why a store refused a write: because of the records' content, or because the store is unavailable.
 *
 * Content errors fail the same way however often the same records are written again, so the write queue splits the
 * batch and quarantines the records that still fail alone (storage/quarantine.ts). Every other error (connection
 * refused or lost, PostgreSQL classes 08 and 57P0x, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL, a
 * time-out, a closed store, anything unknown) is retried with back-off and never quarantines a record: a record is
 * quarantined only on evidence that the store will never take it.
 */
import { truncate } from '../core/truncate';

/**
 * PostgreSQL SQLSTATE classes raised by the values written:
 *   22  data exception: a NUL byte in text (22021), a number that is not an integer (22P02), out of range (22003)
 *   23  integrity constraint violation: NOT NULL (23502), CHECK (23514)...
 *   54  program limit exceeded: an index row over 2,704 bytes (54000), e.g. very long model names in the rollup key
 */
const POSTGRES_CONTENT = /^(22|23|54)[0-9A-Z]{3}$/;
/** SQLite: a constraint (NOT NULL, CHECK, a STRICT column's type), a text or blob over SQLITE_MAX_LENGTH, a datatype mismatch. */
const SQLITE_CONTENT = /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH)(_[A-Z]+)?$/;

/**
 * better-sqlite3 refuses a value too large to bind (a cost beyond 64 bits, a text over SQLite's length limit) itself,
 * with a RangeError and no code, before SQLite sees it (better-sqlite3 12: "The bound string, buffer, or bigint is too
 * big"). Across the writer thread the error keeps its name and message.
 */
const SQLITE_BIND_TOO_BIG = /^The bound .* is too big$/;

/** Longest error message kept in a log line or in the quarantine. */
export const STORE_ERROR_MESSAGE_MAX = 300;

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the store refused the records for their content (retrying them as they are cannot succeed). */
export function isContentError(err: unknown): boolean {
  const code = codeOf(err);
  if (code !== undefined) return POSTGRES_CONTENT.test(code) || SQLITE_CONTENT.test(code);
  const e = err as { name?: unknown; message?: unknown } | null;
  return e?.name === 'RangeError' && typeof e.message === 'string' && SQLITE_BIND_TOO_BIG.test(e.message);
}

/**
 * Errors of a store that refuses writes until someone acts (a full disk, a read-only file, mount or server), as
 * opposed to one that is busy or briefly unreachable: readiness and metrics report it as failing writes.
 *   SQLite: SQLITE_FULL, SQLITE_READONLY_*, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_IOERR_* (a write the disk refused)
 *   PostgreSQL: 53100 disk_full, 53xxx insufficient resources, 25006 read_only_sql_transaction
 *   the file system: ENOSPC, EDQUOT, EROFS, EACCES, EPERM
 */
const REFUSES_WRITES =
  /^(SQLITE_(FULL|READONLY|CANTOPEN|PERM|IOERR)(_[A-Z]+)?|53[0-9A-Z]{3}|25006|ENOSPC|EDQUOT|EROFS|EACCES|EPERM)$/;

/** True when the error says the store refuses writes (see REFUSES_WRITES). */
export function refusesWrites(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && REFUSES_WRITES.test(code);
}

/**
 * Errors of a store that cannot be reached now, as opposed to a query at fault: the connection refused, lost or timed
 * out (Node's codes, PostgreSQL class 08, 57P01-57P03 shutting down or starting, pg's own connection errors, which
 * carry no code), SQLite's file that cannot be opened or stays locked, or a store that refuses writes.
 */
const UNREACHABLE =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|08[0-9A-Z]{3}|57P0[1-3]|SQLITE_CANTOPEN|SQLITE_BUSY)$/;
const UNREACHABLE_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect)/;

/** True when the error says the store cannot be reached now (see UNREACHABLE): worth trying again shortly. */
export function isStoreUnreachable(err: unknown): boolean {
  const code = codeOf(err);
  if (code !== undefined) return UNREACHABLE.test(code) || REFUSES_WRITES.test(code);
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && UNREACHABLE_MESSAGE.test(message);
}

export interface StoreErrorSummary {
  /** SQLSTATE, SQLITE_* or a Node error code such as ECONNREFUSED; null when the error has none. */
  code: string | null;
  /** The message, at most STORE_ERROR_MESSAGE_MAX characters. */
  message: string;
}

/**
 * What a log line or the quarantine keeps of a store error: its code and its bounded message, never the rest of the
 * error object (a PostgreSQL error's `detail` quotes the refused values, which may be a client's input).
 */
export function summarizeStoreError(err: unknown): StoreErrorSummary {
  const message = err instanceof Error ? err.message : String(err);
  // NUL cannot be stored in PostgreSQL text, and a control character has no business in a log line.
  const code = codeOf(err);
  return {
    code: code === undefined ? null : truncate(code, 64),
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
    message: truncate(message.replace(/[\u0000-\u001f\u007f]/g, ' '), STORE_ERROR_MESSAGE_MAX),
  };
}
