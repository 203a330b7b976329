/**
 * `tollgate usage --all --csv`: every group, merged and ranked by the database and written a page at a time
 * (storage/query/ranked.ts, the path of GET /api/usage.csv?limit=all), so the report holds a page of groups, never the
 * grouping, however many groups the range has.
 */
import { once } from 'node:events';
import { readOps } from '../admin/reads/read-ops';
import { openReadConnection } from '../storage/read-connection';
import type { UsageQuery, UsageStore } from '../storage/store';

/** A report from a terminal may read for as long as it needs; the admin API's time limit is for a live gateway. */
const REPORT_TIMEOUT_MS = 30 * 60_000;

export async function writeEveryGroupCsv(store: UsageStore, query: UsageQuery, out: NodeJS.WritableStream) {
  const source = store.readSource();
  const conn =
    source.kind === 'inline'
      ? { dialect: source.dialect, exec: source.exec, close: async () => undefined }
      : openReadConnection(source, { timeoutMs: REPORT_TIMEOUT_MS, exportsMax: 1 });
  try {
    const { groupBy, ...filter } = query;
    await writeChunks(out, readOps(conn).usageCsv({ filter, groupBy, limit: Infinity, offset: 0, search: '' }));
  } finally {
    await conn.close();
  }
}

/** Writes each chunk as it is made, waiting for the output to take it: the whole text is never held. */
export async function writeChunks(
  out: NodeJS.WritableStream,
  chunks: Iterable<string> | AsyncIterable<string | Buffer>,
): Promise<void> {
  for await (const chunk of chunks) if (!out.write(chunk)) await once(out, 'drain');
}
