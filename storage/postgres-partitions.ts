/**
 * The month partitions of usage_records on PostgreSQL (migration 007) and the retention that drops them.
 *
 * One run, on one pool client, by one instance at a time (maintainOnOneClient holds an advisory lock):
 *   1. the current and the next UTC month get their partition if they have none, so that inserts never depend on
 *      the job having run at the right moment; rows of such a month already in the DEFAULT partition (the job did
 *      not run for a month) are moved into it in the same transaction;
 *   2. with retention: each month that ends at or before the cut-off is dropped as a whole table; the month the
 *      cut-off falls in, and the DEFAULT partition, are deleted from in batches (storage/retention.ts).
 *
 * Dropping a partition takes an ACCESS EXCLUSIVE lock on usage_records itself and on the DEFAULT partition, and
 * creating one on the DEFAULT partition: the change takes milliseconds, but its lock waits for the queries already
 * reading the table, and every insert and query asked after it waits behind it. So such a transaction gives up
 * after LOCK_TIMEOUT, and is tried again after a pause of the same length, a few times, then at the next run.
 */
import type { Pool, PoolClient } from 'pg';
import { postgresDialect as d } from './dialect';
import { withClient } from './postgres-pool';
import { RAISE_MARK_SQL, RECORDS_KEPT_FROM, deleteInBatches, type MaintenanceRuns } from './retention';
import type { MaintenanceOptions, MaintenanceResult } from './store';

export const RECORDS_TABLE = 'usage_records';
export const DEFAULT_PARTITION = 'usage_records_default';
const LOCK_TIMEOUT_MS = 1000;
const LOCK_ATTEMPTS = 5;
/** SQLSTATE lock_not_available: lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';
/** Held by the instance running the background maintenance; the others skip their run. */
const MAINTENANCE_LOCK = 7_162_022_002;

export interface MonthPartition {
  name: string;
  from: number;
  to: number;
}

/** UTC month start of `ts`, moved by `months`. */
export function monthStart(ts: number, months = 0): number {
  const d = new Date(ts);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1);
}

/** usage_records_y2026m05: the name migration 007 gives, from the month's start. */
export function partitionName(from: number): string {
  const d = new Date(from);
  return `${RECORDS_TABLE}_y${d.getUTCFullYear()}m${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The range partitions of usage_records, oldest first (the DEFAULT partition is not listed). */
export async function listMonthPartitions(c: PoolClient): Promise<MonthPartition[]> {
  const res = await c.query<{ name: string; bound: string }>(
    `SELECT p.relname AS name, pg_get_expr(p.relpartbound, p.oid) AS bound
     FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
     WHERE i.inhparent = '${RECORDS_TABLE}'::regclass`,
  );
  const out: MonthPartition[] = [];
  for (const { name, bound } of res.rows) {
    const m = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(bound);
    if (m) out.push({ name, from: Number(m[1]), to: Number(m[2]) });
  }
  return out.sort((a, b) => a.from - b.from);
}

/** Runs `fn` in a transaction whose locks wait at most LOCK_TIMEOUT_MS, tried up to LOCK_ATTEMPTS times. */
async function inTransaction<T>(c: PoolClient, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    await c.query('BEGIN');
    try {
      await c.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      const out = await fn();
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt === LOCK_ATTEMPTS) throw err;
    }
    await new Promise((r) => setTimeout(r, LOCK_TIMEOUT_MS));
  }
}

/**
 * Creates the partition of the month starting at `from`, with the rows of that month the DEFAULT partition holds
 * (PostgreSQL refuses a new partition while the DEFAULT one has rows in its range). The columns are listed from
 * the catalog, so that the copy follows whatever columns a later migration adds.
 */
async function createMonth(c: PoolClient, from: number): Promise<string> {
  const to = monthStart(from, 1);
  const name = partitionName(from);
  await inTransaction(c, async () => {
    await c.query(`LOCK TABLE ${DEFAULT_PARTITION} IN ACCESS EXCLUSIVE MODE`);
    const cols = (
      await c.query<{ cols: string }>(
        `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS cols FROM pg_attribute
         WHERE attrelid = '${RECORDS_TABLE}'::regclass AND attnum > 0 AND NOT attisdropped`,
      )
    ).rows[0].cols;
    await c.query(`CREATE TABLE ${name} (LIKE ${RECORDS_TABLE} INCLUDING DEFAULTS)`);
    await c.query(
      `WITH moved AS (DELETE FROM ${DEFAULT_PARTITION} WHERE ts >= $1 AND ts < $2 RETURNING ${cols})
      INSERT INTO ${name} (${cols}) SELECT ${cols} FROM moved`,
      [from, to],
    );
    await c.query(`ALTER TABLE ${RECORDS_TABLE} ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`);
  });
  return name;
}

/** One maintenance run on `c` (the caller holds the maintenance lock). `stopped` is checked between batches. */
export async function maintainPartitions(
  c: PoolClient,
  opts: MaintenanceOptions,
  stopped: () => boolean,
): Promise<MaintenanceResult> {
  const result: MaintenanceResult = { deleted: 0, deleteStatements: 0, droppedPartitions: [], createdPartitions: [] };
  const months = await listMonthPartitions(c);
  for (const from of [monthStart(opts.now), monthStart(opts.now, 1)]) {
    if (months.some((p) => p.from <= from && from < p.to)) continue;
    const name = await createMonth(c, from);
    months.push({ name, from, to: monthStart(from, 1) });
    result.createdPartitions.push(name);
  }
  const retention = opts.retention;
  if (!retention) return result;
  const { before } = retention;
  for (const p of months) {
    if (p.to > before) continue;
    if (stopped()) return { ...result, skipped: 'closing' };
    await inTransaction(c, () => c.query(`DROP TABLE ${p.name}`));
    result.droppedPartitions.push(p.name);
  }
  // The month the cut-off falls in, then the DEFAULT partition: batches of rows located by ctid through the ts index.
  const partial = [...months.filter((p) => p.from < before && before < p.to).map((p) => p.name), DEFAULT_PARTITION];
  for (const table of partial) {
    const run = await deleteInBatches({
      ...retention,
      stopped,
      deleteBatch: async (limit) =>
        (
          await c.query(
            `DELETE FROM ${table} WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${table} WHERE ts < $1 LIMIT $2))`,
            [before, limit],
          )
        ).rowCount ?? 0,
    });
    result.deleted += run.deleted;
    result.deleteStatements += run.statements;
    if (run.stopped) return { ...result, skipped: 'closing' };
  }
  return result;
}

/** One maintenance run on a client of `pool`, skipped while another instance runs one or the store is closing. */
export async function maintainOnOneClient(
  pool: Pool,
  opts: MaintenanceOptions,
  runs: MaintenanceRuns,
): Promise<MaintenanceResult> {
  const nothing: MaintenanceResult = {
    deleted: 0,
    deleteStatements: 0,
    droppedPartitions: [],
    createdPartitions: [],
  };
  if (runs.closing) return { ...nothing, skipped: 'closing' };
  return withClient(pool, async (c, discard) => {
    try {
      // A session lock: held across the run's transactions and autocommit batches, released with the connection.
      const { ok } = (await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MAINTENANCE_LOCK]))
        .rows[0];
      if (!ok) return { ...nothing, skipped: 'locked' };
      try {
        if (opts.retention) await c.query(d.sql(RAISE_MARK_SQL), [RECORDS_KEPT_FROM, opts.retention.before]);
        return await maintainPartitions(c, opts, () => runs.closing);
      } finally {
        await c.query('SELECT pg_advisory_unlock($1)', [MAINTENANCE_LOCK]).catch(discard);
      }
    } catch (err) {
      discard(err as Error);
      throw err;
    }
  });
}
