/**
 * Bodies relayed as they arrive, and the young collection that frees their buffers.
 *
 * Each socket read of a body is a buffer of its own (up to 64 KiB) outside V8's heap. Relayed, it is garbage at
 * once, but its memory only returns when a young collection (a scavenge) finds it dead, and V8 runs one for such
 * buffers only once ~32 MiB of them have piled up. Meanwhile V8 counts them against the old generation's room, so
 * at the heap growth bound (core/heap-growth.ts) a 20 MiB upload streaming through set off a full collection
 * every ~20 MiB: 133 in 4 s of uploads, ~35 ms of CPU and an RSS rise of 1.6-1.9x the upload's size. A young
 * collection after every 4 MiB relayed frees the buffers while they are few, and costs little, as not much else
 * is live in the young generation: 9 full collections, ~15 ms per upload, RSS up 0.7-0.9x, 54-58 uploads/s
 * instead of 30-35 (bench/run.mjs, upload_c1, alternating runs; 8 MiB: 46-51/s; 2 MiB: no better than 4).
 *
 * Only bodies relayed chunk by chunk count (streamed uploads, streamed answers: SSE, audio). A body held whole
 * (read into memory, or spooled to a file) widens the heap growth bound instead (holdForBulkBody), which suits it
 * better: counted as well, spooled uploads were 5-10% slower and 5 MB JSON requests no faster. Small JSON requests
 * and answers do not count: their buffers are few, and V8's own young collections, driven by what a request
 * allocates, come far more often. Needs Node's `--expose-gc` (`npm start` passes it, as core/idle-memory.ts
 * needs it too); without it, nothing runs.
 */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

type GcFunction = (options?: { type?: 'major' | 'minor' }) => void;
/** Node defines gc() only when started with --expose-gc. */
const gc = (globalThis as { gc?: GcFunction }).gc;

let counted = 0;
let uncollected = 0;

/** Counts `bytes` of a body just handed on (their buffers are garbage once written); collects once 4 MiB were. */
export function bodyBytesRelayed(bytes: number): void {
  counted += bytes;
  uncollected += bytes;
  if (uncollected < COLLECT_EVERY_BYTES) return;
  uncollected = 0;
  gc?.({ type: 'minor' });
}

/** Body bytes counted since start (for tests and diagnostics). */
export function relayedBodyBytes(): number {
  return counted;
}
