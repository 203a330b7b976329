/**
 * reconciliation_runs: one row per reconciliation of a provider's bill (reconcile/), with what it fetched and
 * when, its outcome, and the whole report as JSON (GET /api/reconciliation serves it as is). A failed run keeps
 * its error and no report. No key is ever stored here.
 */
import type { Migration } from './index';

function ddl(serial: string, int: string): string {
  return `CREATE TABLE reconciliation_runs (
  id ${serial},
  provider TEXT NOT NULL,
  range_from ${int} NOT NULL,
  range_to ${int} NOT NULL,
  started_at ${int} NOT NULL,
  finished_at ${int} NOT NULL,
  source TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT,
  drift TEXT,
  pages TEXT NOT NULL DEFAULT '{}',
  report TEXT
);
CREATE INDEX reconciliation_runs_provider ON reconciliation_runs (provider, id);`;
}

export const reconciliationRuns: Migration = {
  version: 14,
  name: 'reconciliation_runs',
  postgres: ddl('BIGSERIAL PRIMARY KEY', 'BIGINT'),
  sqlite: ddl('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER'),
};
