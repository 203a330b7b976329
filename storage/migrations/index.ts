/**
 * Versioned schema migrations, applied in order on start and recorded in schema_migrations.
 * Each migration carries the SQL of both dialects so that their schemas stay parallel.
 */
import { initial } from './001_initial';
import { dailyRollups } from './002_daily_rollups';
import { searchContextSize } from './003_search_context_size';
import { tagSets } from './004_tag_sets';
import { recordTagSet } from './005_record_tag_set';
import { quarantinedRecords } from './006_quarantined_records';
import { recordsRetention } from './007_records_retention';
import { costTruth } from './008_cost_truth';
import { notCounted } from './009_not_counted';
import { alertOutbox } from './010_alert_outbox';
import { keyChangeSeq } from './011_key_change_seq';
import { servedTierAudio } from './012_served_tier_audio';
import { runtimeBudgets } from './013_runtime_budgets';
import { reconciliationRuns } from './014_reconciliation_runs';
import { scheduleAndRepriceLog } from './015_schedule_and_reprice_log';
import { batchJobs } from './016_batch_jobs';
import { generationId } from './017_generation_id';
import { tagSetDailyByDay } from './018_tag_set_daily_by_day';
import { upstreamMs } from './019_upstream_ms';
import { tagSetMonthly } from './021_tag_set_monthly';
import { listCost } from './022_list_cost';

export interface Migration {
  version: number;
  name: string;
  /** Run in one transaction with the migration's row in schema_migrations. */
  postgres: string;
  /**
   * Run after `postgres`, one statement at a time and outside any transaction (storage/postgres-migrate.ts): the
   * CREATE INDEX CONCURRENTLY of an index on a table that may be big and written to. Each must be safe to repeat.
   */
  postgresOutsideTransaction?: readonly string[];
  /** Run in one transaction (SQLite has no concurrent index build: its single writer waits for the build). */
  sqlite: string;
}

/** Append only, versions strictly increasing. */
export const MIGRATIONS: readonly Migration[] = [
  initial,
  dailyRollups,
  searchContextSize,
  tagSets,
  recordTagSet,
  quarantinedRecords,
  recordsRetention,
  costTruth,
  notCounted,
  alertOutbox,
  keyChangeSeq,
  servedTierAudio,
  runtimeBudgets,
  reconciliationRuns,
  scheduleAndRepriceLog,
  batchJobs,
  generationId,
  tagSetDailyByDay,
  upstreamMs,
  tagSetMonthly,
  listCost,
];

export const SCHEMA_MIGRATIONS_DDL = {
  postgres:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
  sqlite:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
};

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** Migrations not yet in `applied`, in order. */
export function pendingMigrations(applied: Iterable<number>): Migration[] {
  const done = new Set(applied);
  return MIGRATIONS.filter((m) => !done.has(m.version));
}

/** A database migrated by a newer build still works for us as long as its tables are a superset. */
export function newerVersions(applied: Iterable<number>): number[] {
  return [...applied].filter((v) => v > LATEST_VERSION);
}
