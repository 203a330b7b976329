/**
 * quarantined_records: usage records the store refused for their content (storage/store-errors.ts), kept whole with
 * the error, so that they neither block the records behind them nor get lost (storage/quarantine.ts).
 *
 *   digest          sha256 of record_json (hex): a record quarantined again (a spill file replayed after a crash)
 *                   is kept once; the record id cannot be the key, being the very value that may be too long
 *   record_id       the record's id, at most 256 characters; NULL for a spill-file line that was not a record
 *   record_json     the record as one spill-file line (storage/record-json.ts): written into the spill file, it is
 *                   replayed on the next start, once the cause is fixed (docs/reliability.md)
 *   error_code      SQLSTATE (PostgreSQL), SQLITE_* code, or why a spill line could not be read
 *   error_message   at most 300 characters
 */
import type { Migration } from './index';

const table = (int: string, options: string) => `
CREATE TABLE quarantined_records (
  digest         TEXT PRIMARY KEY,
  record_id      TEXT,
  record_ts      ${int},
  quarantined_at ${int} NOT NULL,
  error_code     TEXT,
  error_message  TEXT NOT NULL,
  record_json    TEXT NOT NULL
)${options};
`;

export const quarantinedRecords: Migration = {
  version: 6,
  name: 'quarantined_records',
  postgres: table('BIGINT', ''),
  sqlite: table('INTEGER', ' STRICT'),
};
