/**
 * Retention of usage records (storage.retention.records_days), shared by both stores.
 *
 * Records older than the cut-off are deleted; the rollups are never touched, so totals over any range stay what
 * they were (storage/query/coverage.ts names the few queries that need records and so cannot answer before it).
 * The cut-off is a UTC day start: the deleted part of the timeline is whole days, which both the hourly and the
 * daily rollups cover exactly.
 *
 * Deletes run in batches of a bounded size with a pause between them, so that the writes of the gateway (queued
 * meanwhile, never on a request's path) get the database between two batches instead of waiting for one long
 * statement. The cut-off is stored (storage_marks, migration 007) before the first batch, so that readers know
 * from then on which records may be gone.
 */
import { toNumber } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';
import { DAY_MS, floorDay } from './rollup';

/** The storage_marks row holding the retention's cut-off. */
export const RECORDS_KEPT_FROM = 'records_kept_from';

/** Stores a mark, never moving it backwards (the cut-off only grows: what it passed is gone). Same in both dialects. */
export const RAISE_MARK_SQL = `INSERT INTO storage_marks (name, value) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET value = CASE WHEN excluded.value > storage_marks.value THEN excluded.value ELSE storage_marks.value END`;
export const READ_MARK_SQL = 'SELECT value FROM storage_marks WHERE name = ?';

/** The stored cut-off (UsageStore.recordsKeptFrom): null while no retention ran. */
export async function readRecordsKeptFrom(d: SqlDialect, exec: Exec): Promise<number | null> {
  const [row] = await exec({ sql: d.sql(READ_MARK_SQL), params: [RECORDS_KEPT_FROM] });
  return row ? toNumber(row.value) : null;
}

/**
 * Records before this are deleted: the start of the UTC day `days` days before today. Each record is kept at least
 * `days` full days (and less than one more).
 */
export function retentionCutoff(now: number, days: number): number {
  return floorDay(now) - days * DAY_MS;
}

export interface BatchedDelete {
  /** Deletes at most `limit` rows; returns how many it deleted. */
  deleteBatch(limit: number): Promise<number> | number;
  batchSize: number;
  pauseMs: number;
  /** Checked before each batch: true stops the loop (the store is closing). */
  stopped(): boolean;
}

/** Runs batches until one deletes fewer rows than the batch size (nothing older is left). */
export async function deleteInBatches(
  job: BatchedDelete,
): Promise<{ deleted: number; statements: number; stopped: boolean }> {
  let deleted = 0;
  let statements = 0;
  for (;;) {
    if (job.stopped()) return { deleted, statements, stopped: true };
    const n = await job.deleteBatch(job.batchSize);
    statements++;
    deleted += n;
    if (n < job.batchSize) return { deleted, statements, stopped: false };
    if (job.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, job.pauseMs));
  }
}

/** A store's maintenance run in progress, which the store's close() stops at its next batch and waits for. */
export class MaintenanceRuns {
  /** True once the store is closing: no run starts, a running one stops before its next batch. */
  closing = false;
  private current: Promise<unknown> | undefined;

  track<T>(run: Promise<T>): Promise<T> {
    this.current = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    this.closing = true;
    await this.current;
  }
}
