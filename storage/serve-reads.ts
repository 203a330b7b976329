/**
 * The worker side of storage/reader-thread.ts: the messages between the two threads, and serveReads, which a reader
 * thread's script calls with its operations.
 */
import { parentPort } from 'node:worker_threads';

export type ReadRequest =
  { id: number; op: string; arg: unknown; stream: boolean } | { id: number; pull: true } | { id: number; cancel: true };
export type ReadResponse =
  | { id: number; result: unknown; more?: boolean }
  | { id: number; error: { message: string; name: string; code?: string } };

/** A streamed read on the worker side: its chunks, and the one made ahead while the last one travels. */
interface WorkerStream {
  chunks: AsyncIterator<Uint8Array>;
  ahead?: Promise<IteratorResult<Uint8Array>>;
}

/**
 * A streamed read's next chunk; the generator is dropped after its last. The chunk after it is made at once (its
 * failure, if any, answers the next pull): a reader thread at the lowest priority may wait for a core at each wake-up,
 * and one chunk ahead, never more, hides that wait behind the response's writing.
 */
async function nextChunk(
  streams: Map<number, WorkerStream>,
  id: number,
): Promise<{ result: Uint8Array | null; more: boolean }> {
  const stream = streams.get(id);
  if (!stream) throw new Error('the streamed read was stopped');
  const { value, done } = await (stream.ahead ?? stream.chunks.next());
  if (done) {
    streams.delete(id);
    return { result: null, more: false };
  }
  stream.ahead = stream.chunks.next();
  stream.ahead.catch(() => undefined);
  return { result: value, more: true };
}

/**
 * The worker side: answers each request with ops[op](arg). Bytes (a Uint8Array over a whole buffer) are transferred.
 * A read the database cancelled for its time limit (an error with code CANCELLED_CODE) fails as a QueryTimeoutError.
 * A streamed read's op returns an async iterator of chunks: one is answered for each pull, and cancel returns it.
 */
export function serveReads(ops: Record<string, (arg: never) => unknown>): void {
  const port = parentPort;
  if (!port) throw new Error('serveReads runs on a worker thread');
  const streams = new Map<number, WorkerStream>();
  port.on('message', async (msg: ReadRequest) => {
    const { id } = msg;
    if ('cancel' in msg) {
      const stream = streams.get(id);
      streams.delete(id);
      await stream?.chunks.return?.();
      return;
    }
    let response: ReadResponse;
    let transfer: ArrayBuffer[] | undefined;
    try {
      let answer: { result: unknown; more?: boolean };
      if ('pull' in msg) answer = await nextChunk(streams, id);
      else {
        const run = Object.hasOwn(ops, msg.op) ? ops[msg.op] : undefined;
        if (!run) throw new Error(`unknown read ${msg.op}`);
        const result = run(msg.arg as never);
        if (msg.stream) streams.set(id, { chunks: result as AsyncIterator<Uint8Array> });
        answer = msg.stream ? await nextChunk(streams, id) : { result: await result };
      }
      const { result } = answer;
      if (result instanceof Uint8Array && result.byteOffset === 0 && result.byteLength === result.buffer.byteLength)
        transfer = [result.buffer as ArrayBuffer];
      response = { id, ...answer };
    } catch (err) {
      streams.delete(id);
      const e = err as Error & { code?: unknown };
      response = {
        id,
        error: { message: e.message, name: e.name, code: typeof e.code === 'string' ? e.code : undefined },
      };
    }
    port.postMessage(response, transfer);
  });
}
