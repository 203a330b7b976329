/**
 * upstream_ms: the provider's own time for a request, from sending it upstream to the last byte of the answer, so
 * that the latency view can show the gateway's overhead (latency_ms - upstream_ms) beside the provider's time to
 * first byte. NULL for requests that never reached a provider and for records written before this migration: an
 * ALTER that adds a nullable column without a default rewrites no row on either store.
 */
import type { Migration } from './index';

const DDL = 'ALTER TABLE usage_records ADD COLUMN upstream_ms INTEGER;';

export const upstreamMs: Migration = {
  version: 19,
  name: 'upstream_ms',
  postgres: DDL,
  sqlite: DDL,
};
