/**
 * Opaque page cursors of the admin API (keys, budgets): base64url of a small JSON value, checked when read back so
 * that a cursor edited by hand is a 400 naming `cursor`, never a query error.
 */
import { GatewayError } from '../core/errors';

export function encodePageCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The cursor's value when `valid` accepts it; else 400 invalid_body (param cursor). */
export function decodePageCursor<T>(cursor: string, valid: (v: unknown) => v is T): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (!valid(value))
    throw new GatewayError('invalid_body', 'cursor is not a next_cursor of this list', { param: 'cursor' });
  return value;
}

/** A row id or sequence number as a cursor holds it. */
export const isPositiveId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
