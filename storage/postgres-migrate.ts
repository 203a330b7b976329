/**
 * Applies pending migrations on PostgreSQL, one instance at a time.
 *
 * Each migration's `postgres` SQL runs in a transaction of its own, with its row in schema_migrations. A migration
 * with `postgresOutsideTransaction` statements (CREATE INDEX CONCURRENTLY, which cannot run inside a transaction)
 * then runs them one by one outside any, and is recorded only once they all succeeded: an index is built on a big,
 * live table without blocking its writes. A build that fails leaves an invalid index behind, so such statements
 * are written to be repeated from the first one (DROP INDEX CONCURRENTLY IF EXISTS before each CREATE).
 *
 * The instances serialise on a session advisory lock, asked for by polling pg_try_advisory_lock: a session
 * blocked in pg_advisory_lock holds a snapshot while it waits, and CREATE INDEX CONCURRENTLY waits for every
 * older snapshot to end, so a second instance starting during the build would wait on it and it on them.
 */
import type { PoolClient } from 'pg';
import {
  SCHEMA_MIGRATIONS_DDL,
  newerVersions,
  pendingMigrations,
  LATEST_VERSION,
  type Migration,
} from './migrations/index';
import type { StorageLogger } from './store';

/** Serialises migrations of concurrently starting instances (any stable 64-bit number). */
const MIGRATION_LOCK = 7_162_022_001;
/** How often an instance asks again for the migration lock another one holds. */
const LOCK_POLL_MS = 100;

export interface MigrationRun {
  applied: number[];
  done: number[];
}

export async function migratePostgres(c: PoolClient, schema?: string, log?: StorageLogger): Promise<MigrationRun> {
  while (!(await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MIGRATION_LOCK])).rows[0].ok)
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  try {
    if (schema) await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await c.query(SCHEMA_MIGRATIONS_DDL.postgres);
    const applied = (await c.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) =>
      Number(r.version),
    );
    const newer = newerVersions(applied);
    if (newer.length)
      log?.warn({ versions: newer, known: LATEST_VERSION }, 'database has migrations newer than this build');
    const done: number[] = [];
    for (const m of pendingMigrations(applied)) {
      await applyMigration(c, m);
      done.push(m.version);
    }
    return { applied, done };
  } finally {
    // A lost connection has released the lock already.
    await c.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
  }
}

async function applyMigration(c: PoolClient, m: Migration): Promise<void> {
  const record = () =>
    c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
      m.version,
      m.name,
      Date.now(),
    ]);
  await c.query('BEGIN');
  try {
    if (m.postgres) await c.query(m.postgres);
    if (!m.postgresOutsideTransaction) await record();
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined); // the first error is the one to report
    throw err;
  }
  if (!m.postgresOutsideTransaction) return;
  for (const statement of m.postgresOutsideTransaction) await c.query(statement);
  await record();
}
