/**
 * The worker side of storage/sqlite-writer.ts: one SQLite connection that runs the store's own write code
 * (SqliteUsageStore, inline mode) for each request the main thread posts, in order. Each write is synchronous and
 * runs whole; a maintenance run pauses between its batches, and the writes posted meanwhile run in those pauses.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { unpackRecords } from './packed-records';
import { SqliteUsageStore } from './sqlite-store';
import type { WriterRequest, WriterResponse, WriterThreadOptions } from './sqlite-writer';

const options = workerData as WriterThreadOptions;
const store = new SqliteUsageStore(options.path, {
  busyTimeoutMs: options.busyTimeoutMs,
  cacheKib: options.cacheKib,
  writerThread: false,
});
const port = parentPort!;

function run(msg: WriterRequest): unknown {
  switch (msg.op) {
    case 'insertPacked':
      return store.insertBatch(unpackRecords(msg.packed));
    case 'insertBatch':
      return store.insertBatch(msg.records);
    case 'quarantine':
      return store.quarantine(msg.entries);
    case 'touchKeys':
      return store.touchKeys(msg.ids, msg.lastUsedAt);
    case 'maintain':
      return store.maintain(msg.opts);
  }
}

port.on('message', async (msg: WriterRequest | { op: 'close' }) => {
  if (msg.op === 'close') {
    await store.close();
    port.close();
    return;
  }
  let response: WriterResponse;
  try {
    response = { id: msg.id, result: await run(msg) };
  } catch (err) {
    const e = err as Error & { code?: unknown };
    response = {
      id: msg.id,
      error: { message: e.message, name: e.name, code: typeof e.code === 'string' ? e.code : undefined },
    };
  }
  port.postMessage(response);
});
