/**
 * A record's cost at the catalog's list price beside its effective cost, so that reports show a negotiated discount
 * (pricing.discounts) apart:
 *   list_cost_pico   on usage_records: the cost before the discount, equal to cost_pico when none applied, NULL when
 *                    the cost is unknown and on records written before this migration.
 * and, in every rollup table, two counters:
 *   discount_pico    the sum of list_cost_pico - cost_pico over the records that have a list cost (split in _hi and
 *                    _lo in the daily tables, like their cost), so that a group's list cost is its cost plus this;
 *   list_cost_count  the records that have a list cost. A group's records with a cost and no list cost (written
 *                    before this migration) are its priced records less this count: reads say how many there are.
 * No row is rewritten on either store: the record column is nullable without a default, and the counters' constant
 * default 0 is the true value of every rollup row written before (none of its records had a list cost). Records
 * get a list cost, and their rollup rows the matching counters, when they are repriced (`tollgate usage reprice`),
 * exactly, from their stored counts.
 */
import type { Migration } from './index';

const HOURLY = ['usage_rollup_hourly', 'usage_tag_rollup_hourly'];
const DAILY = ['usage_rollup_daily', 'usage_tag_rollup_daily', 'usage_tag_set_daily', 'usage_tag_set_monthly'];

function ddl(int: string): string {
  const add = (table: string, columns: string[]) =>
    columns.map((c) => `ALTER TABLE ${table} ADD COLUMN ${c} ${int} NOT NULL DEFAULT 0;`);
  return [
    `ALTER TABLE usage_records ADD COLUMN list_cost_pico ${int};`,
    ...HOURLY.flatMap((t) => add(t, ['discount_pico', 'list_cost_count'])),
    ...DAILY.flatMap((t) => add(t, ['discount_pico_hi', 'discount_pico_lo', 'list_cost_count'])),
  ].join('\n');
}

export const listCost: Migration = { version: 22, name: 'list_cost', postgres: ddl('BIGINT'), sqlite: ddl('INTEGER') };
