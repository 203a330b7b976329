/**
 * runtime_budgets: budgets created, changed and deleted through the admin API, shared by every instance using the
 * store (each polls it). body is the budget as JSON (config/limits.ts's budget fields); YAML budgets are not here.
 * spend_freezes: scopes (a workspace, a key or a tag value) whose requests are refused after a spend anomaly, until
 * lifted or expired.
 */
import type { Migration } from './index';

function ddl(int: string, strict: string): string {
  return `CREATE TABLE runtime_budgets (
  id TEXT PRIMARY KEY,
  workspace TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at ${int} NOT NULL,
  updated_at ${int} NOT NULL
)${strict};
CREATE TABLE spend_freezes (
  id TEXT PRIMARY KEY,
  workspace TEXT NOT NULL,
  scope TEXT NOT NULL,
  reason TEXT NOT NULL,
  created_at ${int} NOT NULL,
  expires_at ${int},
  lifted_at ${int}
)${strict};
CREATE INDEX spend_freezes_active ON spend_freezes (lifted_at, workspace);`;
}

export const runtimeBudgets: Migration = {
  version: 13,
  name: 'runtime_budgets',
  postgres: ddl('BIGINT', ''),
  sqlite: ddl('INTEGER', ' STRICT'),
};
