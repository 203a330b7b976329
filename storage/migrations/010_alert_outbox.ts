/**
 * alert_outbox: every alert for every channel, kept until delivered and after (GET /api/alerts lists it). A row is
 * one alert for one channel; (alert_id, channel) is unique, so an alert raised twice (a restart, a second instance)
 * is stored, and sent, once. Rows of a channel are delivered in seq order, one at a time: claimed_until is the lease
 * of the instance sending it.
 */
import type { Migration } from './index';

function ddl(serial: string, int: string): string {
  return `CREATE TABLE alert_outbox (
  seq ${serial},
  alert_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  kind TEXT NOT NULL,
  workspace TEXT,
  created_at ${int} NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts ${int} NOT NULL DEFAULT 0,
  next_attempt_at ${int} NOT NULL,
  claimed_by TEXT,
  claimed_until ${int} NOT NULL DEFAULT 0,
  sent_at ${int},
  last_error TEXT,
  UNIQUE (alert_id, channel)
);
CREATE INDEX alert_outbox_due ON alert_outbox (channel, state, seq);`;
}

export const alertOutbox: Migration = {
  version: 10,
  name: 'alert_outbox',
  postgres: ddl('BIGSERIAL PRIMARY KEY', 'BIGINT'),
  sqlite: ddl('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER'),
};
