/**
 * keys.updated_seq: the change sequence of the keys table. Creating or revoking a key gives its row the next
 * sequence number, so the key sync reads only the rows changed since the last number it saw instead of the whole
 * table. Existing rows are numbered in creation order.
 */
import type { Migration } from './index';

const NUMBER_EXISTING = `UPDATE keys SET updated_seq = ranked.seq FROM (
  SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) AS seq FROM keys
) AS ranked WHERE keys.id = ranked.id;
CREATE INDEX keys_updated_seq ON keys (updated_seq);`;

export const keyChangeSeq: Migration = {
  version: 11,
  name: 'key_change_seq',
  postgres: `ALTER TABLE keys ADD COLUMN updated_seq BIGINT NOT NULL DEFAULT 0;\n${NUMBER_EXISTING}`,
  sqlite: `ALTER TABLE keys ADD COLUMN updated_seq INTEGER NOT NULL DEFAULT 0;\n${NUMBER_EXISTING}`,
};
