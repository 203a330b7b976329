/**
 * The worker side of storage/sqlite-writer.ts: one SQLite connection that runs the store's own write code
 * (SqliteUsageStore, inline mode) for each request the main thread posts, one at a time, in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteUsageStore } from './sqlite-store';
import type { WriterRequest, WriterResponse, WriterThreadOptions } from './sqlite-writer';

const options = workerData as WriterThreadOptions;
const store = new SqliteUsageStore(options.path, { busyTimeoutMs: options.busyTimeoutMs, cacheKib: options.cacheKib, writerThread: false });
const port = parentPort!;

/** Two full collections, as on the main thread (core/idle-memory.ts says why two); gc() exists with --expose-gc. */
function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
}

port.on('message', async (msg: WriterRequest | { op: 'close' }) => {
  if (msg.op === 'close') {
    await store.close();
    port.close();
    return;
  }
  let response: WriterResponse;
  try {
    const result = msg.op === 'insertBatch' ? await store.insertBatch(msg.records) : msg.op === 'touchKeys' ? await store.touchKeys(msg.ids, msg.lastUsedAt) : collectGarbage();
    response = { id: msg.id, result };
  } catch (err) {
    const e = err as Error & { code?: unknown };
    response = { id: msg.id, error: { message: e.message, name: e.name, code: typeof e.code === 'string' ? e.code : undefined } };
  }
  port.postMessage(response);
});
