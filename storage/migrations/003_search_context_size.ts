/**
 * Perplexity's search_context_size (low | medium | high) on each record. It picks the request fee, so
 * `tollgate usage reprice` needs it to charge the tier the request was billed at. Records written before this
 * migration keep NULL (unknown: repricing then uses Perplexity's documented default, low).
 */
import type { Migration } from './index';

const ddl = 'ALTER TABLE usage_records ADD COLUMN search_context_size TEXT;';

export const searchContextSize: Migration = { version: 3, name: 'search_context_size', postgres: ddl, sqlite: ddl };
