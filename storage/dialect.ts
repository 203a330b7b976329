/**
 * The few places where SQLite and PostgreSQL differ for the shared query builders.
 */
import type { SqlValue } from './codec';
import { toMoney } from './codec';

export interface SqlDialect {
  readonly name: 'sqlite' | 'postgres';
  /**
   * The planner reorders joins as its estimates say (PostgreSQL), rather than keeping a CROSS JOIN's written order
   * (SQLite). Where those estimates are known to be poor, the builders then pin the plan (LATERAL, OFFSET 0).
   */
  readonly reordersJoins: boolean;
  /** SELECT-list item(s) summing a money expression exactly, aliased `alias`; read back with readMoney. */
  sumMoney(expr: string, alias: string): string;
  readMoney(row: Record<string, unknown>, alias: string): bigint;
  /** Like sumMoney, for money kept in two columns as hi * 2^32 + lo (the daily rollups); read back with readMoney. */
  sumSplitMoney(hi: string, lo: string, alias: string): string;
  /** Rewrites the builders' `?` placeholders for the driver. */
  sql(text: string): string;
  /** Adapts a value for binding. */
  bind(v: SqlValue): unknown;
}

/**
 * SQLite's SUM over 64-bit integers throws "integer overflow" past 2^63 pico-USD (~$9.2M) per result.
 * Summing the high and low 32-bit halves separately keeps every partial sum far from the limit
 * (each stored amount is < 2^63, so hi < 2^31 and lo < 2^32 per row), and JS recombines them as
 * bigint. A single stored amount (one record, or one rollup row = one hour of one group) must
 * still stay below 2^63 pico-USD.
 */
export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  reordersJoins: false,
  sumMoney: (expr, alias) => `SUM((${expr}) >> 32) AS ${alias}_hi, SUM((${expr}) & 4294967295) AS ${alias}_lo`,
  readMoney: (row, alias) => (toMoney(row[`${alias}_hi`]) << 32n) + toMoney(row[`${alias}_lo`]),
  sumSplitMoney: (hi, lo, alias) => `SUM(${hi}) AS ${alias}_hi, SUM(${lo}) AS ${alias}_lo`,
  sql: (text) => text,
  bind: (v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v),
};

/** PostgreSQL's SUM(bigint) is numeric (no overflow); pg returns it as a string. */
export const postgresDialect: SqlDialect = {
  name: 'postgres',
  reordersJoins: true,
  sumMoney: (expr, alias) => `SUM(${expr}) AS ${alias}`,
  readMoney: (row, alias) => toMoney(row[alias]),
  sumSplitMoney: (hi, lo, alias) => `SUM(${hi}) * 4294967296 + SUM(${lo}) AS ${alias}`,
  sql: (text) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${++n}`);
  },
  bind: (v) => (typeof v === 'bigint' ? v.toString() : v),
};
