/**
 * generation_id: the id an aggregator gave its answer (OpenRouter's `gen-…`), by which its generation API gives
 * what that one request cost, so that a reconciliation can set each record beside its own bill. NULL for every
 * other provider and for records written before this migration.
 */
import type { Migration } from './index';

const DDL = 'ALTER TABLE usage_records ADD COLUMN generation_id TEXT;';

export const generationId: Migration = {
  version: 17,
  name: 'generation_id',
  postgres: DDL,
  sqlite: DDL,
};
