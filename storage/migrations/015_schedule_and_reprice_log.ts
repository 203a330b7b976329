/**
 * reconciliation_schedule: one row per provider the gateway reconciles on a schedule (reconcile/schedule.ts). An
 * instance claims a provider's run by a lease (claimed_by, claimed_until), as the alert outbox does, so that among
 * the instances sharing the store one runs it; last_day is the UTC day whose scheduled run succeeded.
 *
 * reprice_log: what each applied `usage reprice` changed and why (the reason given, or the reconciliation run it
 * fixes), so that a period repriced after a price change stays auditable: the range, the records changed, their
 * cost before and after, and the price versions they moved from and to.
 */
import type { Migration } from './index';

function ddl(serial: string, int: string): string {
  return `CREATE TABLE reconciliation_schedule (
  provider TEXT PRIMARY KEY,
  last_day TEXT,
  claimed_by TEXT,
  claimed_until ${int} NOT NULL DEFAULT 0
);
CREATE TABLE reprice_log (
  id ${serial},
  at ${int} NOT NULL,
  reason TEXT NOT NULL,
  range_from ${int},
  range_to ${int},
  filters TEXT NOT NULL DEFAULT '{}',
  scanned ${int} NOT NULL,
  changed ${int} NOT NULL,
  cost_before TEXT NOT NULL,
  cost_after TEXT NOT NULL,
  versions TEXT NOT NULL DEFAULT '{}'
);`;
}

export const scheduleAndRepriceLog: Migration = {
  version: 15,
  name: 'schedule_and_reprice_log',
  postgres: ddl('BIGSERIAL PRIMARY KEY', 'BIGINT'),
  sqlite: ddl('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER'),
};
