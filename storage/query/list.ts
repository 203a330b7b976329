/**
 * Keyset-paged reads of raw records, shared by listRequests and repriceAll.
 * The cursor is opaque to callers: base64url of [ts, id] of the last record returned.
 */
import type { UsageRecord } from '../../records/usage-record';
import { recordFromRow } from '../codec';
import type { SqlDialect } from '../dialect';
import type { ListRequestsQuery, RequestPage, UsageFilter } from '../store';
import { checkRange, parseFilters } from './plan';
import type { Exec } from './run';
import { listRecordsSql } from './sql';
import { listVia } from './via';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

export function encodeCursor(r: { ts: number; id: string }): string {
  return Buffer.from(JSON.stringify([r.ts, r.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { ts: number; id: string } {
  try {
    const [ts, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (Number.isSafeInteger(ts) && typeof id === 'string') return { ts: ts as number, id };
  } catch {
    // fall through
  }
  throw new Error('invalid cursor');
}

/** The first time window of a listing by sets; each next one is WINDOW_GROWTH times longer. */
const FIRST_WINDOW_MS = 3_600_000;
const WINDOW_GROWTH = 4;

/**
 * Newest first; fetches one extra row to know whether another page exists.
 * By sets (a tag value rare in the range, storage/query/via.ts), the newest hour is read first, then windows 4, 16,
 * 64... times longer, until the page is full: each query sorts only the matching records of its window, where one
 * over the whole range would sort every matching record of a month to return a hundred.
 */
export async function listPage(d: SqlDialect, exec: Exec, q: ListRequestsQuery): Promise<RequestPage> {
  checkRange(q);
  const limit = Math.min(Math.max(1, Math.floor(q.limit ?? DEFAULT_PAGE)), MAX_PAGE);
  const after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const filters = parseFilters(q.filters);
  const via = await listVia(d, exec, filters, q.from, q.to);
  const want = limit + 1;
  const rows: Record<string, unknown>[] = [];
  if (via === 'time') {
    rows.push(
      ...(await exec(listRecordsSql(d, { from: q.from, to: q.to, filters, order: 'desc', after, limit: want, via }))),
    );
  } else {
    // Rows at after.ts may remain (ids below the cursor's): the first window ends just past it.
    let to = after ? Math.min(q.to, after.ts + 1) : q.to;
    for (let span = FIRST_WINDOW_MS; to > q.from && rows.length < want; span *= WINDOW_GROWTH) {
      const from = Math.max(q.from, to - span);
      rows.push(
        ...(await exec(listRecordsSql(d, { from, to, filters, order: 'desc', after, limit: want - rows.length, via }))),
      );
      to = from;
    }
  }
  const records = rows.slice(0, limit).map(recordFromRow);
  const last = records[records.length - 1];
  return { records, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/** All records matching `filter`, oldest first, in chunks (for maintenance jobs such as repricing). */
export async function* scanRecords(
  d: SqlDialect,
  exec: Exec,
  filter: Partial<UsageFilter>,
  chunk: number,
): AsyncGenerator<UsageRecord[]> {
  checkRange(filter);
  const from = filter.from ?? Number.MIN_SAFE_INTEGER;
  const to = filter.to ?? Number.MAX_SAFE_INTEGER;
  const filters = parseFilters(filter.filters);
  let after: { ts: number; id: string } | undefined;
  for (;;) {
    const rows = await exec(listRecordsSql(d, { from, to, filters, order: 'asc', after, limit: chunk, via: 'time' }));
    if (rows.length === 0) return;
    const records = rows.map(recordFromRow);
    yield records;
    const last = records[records.length - 1];
    after = { ts: last.ts, id: last.id };
    if (rows.length < chunk) return;
  }
}
