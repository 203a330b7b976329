/**
 * How the CLI fails: one line on stderr, never a stack trace (TOLLGATE_DEBUG=1 adds it). Exit code 2 for what
 * the user can correct (an option, the config, a database or port that is not there), 1 for anything else.
 */
import { CommanderError } from 'commander';
import { ConfigError } from '../config/load';
import { GatewayError } from '../core/errors';
import { StoreNotFoundError } from '../storage';

/** A mistake the user can correct: a bad option value, a missing database, a port in use. */
export class UserError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UserError';
  }
}

export const EXIT_INTERNAL = 1;
export const EXIT_USER = 2;

/** System errors about the machine around the gateway: files, ports, hosts. */
const ENVIRONMENT_CODES = new Set([
  'EADDRINUSE',
  'EADDRNOTAVAIL',
  'EACCES',
  'EPERM',
  'ENOENT',
  'ENOTDIR',
  'EISDIR',
  'EEXIST',
  'EROFS',
  'ENOSPC',
  'ENAMETOOLONG',
  'ELOOP',
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/** better-sqlite3's codes for a file that is missing, unwritable, locked, full or not a database. */
const SQLITE_FILE_CODES = new Set([
  'SQLITE_CANTOPEN',
  'SQLITE_NOTADB',
  'SQLITE_READONLY',
  'SQLITE_BUSY',
  'SQLITE_FULL',
  'SQLITE_CORRUPT',
  'SQLITE_PERM',
  'SQLITE_AUTH',
]);
/** PostgreSQL SQLSTATEs: bad credentials (28...), no such database (3D000) or schema (3F000), no privilege (42501). */
const POSTGRES_ACCESS = /^(28|3D|3F)[0-9A-Z]{3}$|^42501$/;

/**
 * Whether the user can act on this error. Errors thrown while the gateway starts (plugin and provider loading)
 * are recognised by their class name, so this file imports nothing from the start-up wiring.
 */
export function isUserError(err: unknown): boolean {
  if (
    err instanceof UserError ||
    err instanceof ConfigError ||
    err instanceof StoreNotFoundError ||
    err instanceof GatewayError
  )
    return true;
  if (!(err instanceof Error)) return false;
  if (/ConfigError$|ModuleLoadError$/.test(err.constructor.name)) return true;
  const code = (err as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (ENVIRONMENT_CODES.has(code) || SQLITE_FILE_CODES.has(code) || POSTGRES_ACCESS.test(code))
  )
    return true;
  // "server.upload_spool_dir: cannot create ..." caused by ENOTDIR: the cause says whose it is.
  return err.cause !== undefined && isUserError(err.cause);
}

/**
 * A message on one line: a list under a heading ("x is invalid:\n  - a: ...\n  - b: ...") becomes
 * "x is invalid: a: ...; b: ...".
 */
export function oneLine(message: string): string {
  const [head, ...rest] = message.split('\n');
  const items = rest.map((l) => l.trim().replace(/^- /, '')).filter(Boolean);
  return items.length ? `${head.trimEnd()} ${items.join('; ')}` : head;
}

/**
 * The line printed for an error, without the "tollgate: " prefix. A connection to a name with several addresses
 * fails as an AggregateError with an empty message: its first error says what happened.
 */
export function errorLine(err: unknown): string {
  if (!(err instanceof Error)) return oneLine(String(err));
  if (!err.message && err instanceof AggregateError && err.errors.length) return errorLine(err.errors[0]);
  return oneLine(err.message || (err as { code?: string }).code || err.name);
}

/** The stack, and the stacks of its causes. */
function stacks(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return `${err.stack ?? err.message}${err.cause !== undefined ? `\ncaused by: ${stacks(err.cause)}` : ''}`;
}

/** Prints the error as one line (with its stack under TOLLGATE_DEBUG=1) and exits: 2 for a user error, else 1. */
export function exitWithError(err: unknown, context?: string): never {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USER); // commander printed it
  const user = isUserError(err);
  const line = `${context ? `${context}: ` : ''}${errorLine(err)}`;
  if (process.env.TOLLGATE_DEBUG) {
    process.stderr.write(`tollgate: ${line}\n${stacks(err)}\n`);
  } else {
    process.stderr.write(`tollgate: ${user ? line : `internal error: ${line} (TOLLGATE_DEBUG=1 prints the stack)`}\n`);
  }
  process.exit(user ? EXIT_USER : EXIT_INTERNAL);
}

/** A listener that could not open its port, said in the user's terms (the rest is returned as is). */
export function listenFailure(err: unknown): unknown {
  const e = err as { code?: string; syscall?: string; address?: string; port?: number };
  // A cluster worker's port is bound by the primary on its behalf: the worker sees "bind", not "listen".
  if (!(err instanceof Error) || (e.syscall !== 'listen' && e.syscall !== 'bind') || e.port === undefined) return err;
  const where = `${e.address ?? ''}:${e.port}`;
  if (e.code === 'EADDRINUSE')
    return new UserError(`port ${e.port} is in use (${where}): stop what listens there or choose another port`, {
      cause: err,
    });
  if (e.code === 'EACCES')
    return new UserError(`no permission to listen on ${where} (ports below 1024 need privileges)`, { cause: err });
  if (e.code === 'EADDRNOTAVAIL')
    return new UserError(`cannot listen on ${where}: this machine has no such address`, { cause: err });
  return err;
}
