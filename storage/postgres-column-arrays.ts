/**
 * How the PostgreSQL store sends rows: one array per column, expanded with unnest(). A statement then has a few
 * parameters whatever the number of rows, which also avoids pg's 65535-parameter limit.
 */
import type { SqlValue } from './codec';
import { postgresDialect as d } from './dialect';

/** `SELECT * FROM unnest($1::t1[], $2::t2[], ...)`. */
export function unnest(types: string[]): string {
  return `SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`;
}

/** Row-major values to one array per column. */
export function columns(rows: readonly (readonly SqlValue[])[], width: number): unknown[][] {
  const cols: unknown[][] = Array.from({ length: width }, () => new Array<unknown>(rows.length));
  rows.forEach((row, i) => row.forEach((v, j) => (cols[j][i] = d.bind(v))));
  return cols;
}
