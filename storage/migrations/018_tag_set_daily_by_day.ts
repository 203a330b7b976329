/**
 * usage_tag_set_daily by day: its key (set_id, day) serves the reads of a few sets, and every other read of the
 * table (a grouping on two tag keys over a month, with no tag value to pick sets by) had to read every set's every
 * day to keep those of the range. With (day, set_id) such a read takes only the range's rows.
 *
 * PostgreSQL builds it concurrently, outside a transaction (storage/postgres-migrate.ts): the table grows with the
 * records and is written on every batch, and a plain CREATE INDEX would hold those writes for the whole build.
 * An interrupted build leaves an invalid index of that name: the DROP before the CREATE clears it on the next try.
 */
import type { Migration } from './index';

const INDEX = 'usage_tag_set_daily_day';
const COLUMNS = 'usage_tag_set_daily (day, set_id)';

export const tagSetDailyByDay: Migration = {
  version: 18,
  name: 'tag_set_daily_by_day',
  postgres: '',
  postgresOutsideTransaction: [
    `DROP INDEX CONCURRENTLY IF EXISTS ${INDEX}`,
    `CREATE INDEX CONCURRENTLY ${INDEX} ON ${COLUMNS}`,
  ],
  sqlite: `CREATE INDEX ${INDEX} ON ${COLUMNS};`,
};
