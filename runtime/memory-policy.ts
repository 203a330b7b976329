import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BodyMemoryObserver } from '../core/body-memory';

/**
 * The gateway's memory policy, in one place: how far V8's heap may grow (limitHeapGrowth, holdForBulkBody),
 * young collections after bodies relayed chunk by chunk (bodyBytesRelayed), and full collections once traffic
 * stops (IdleMemoryRelease). The data plane only reports what it does with bodies (core/body-memory.ts); the
 * runtime installs bodyMemoryPolicy as the observer of those reports.
 */

// ---- heap growth ----

/** The percentage set by limitHeapGrowth; 0 = V8's own factor. */
let bound = 0;
/** Bulk bodies in flight (holdForBulkBody). */
let bulkBodies = 0;

/**
 * Bounds how far the heap may grow between two full collections: V8 starts its next one once the old generation
 * reaches `percent`% more than what the last one left live (its `--heap-growing-percent`).
 *
 * By default V8 picks that factor itself, up to 4x for a small heap: with the proxy's ~20 MiB live, garbage piled
 * up in the old generation under load (in-flight requests and queued usage records live long enough to be
 * promoted, then die) and peak RSS reached ~215 MiB in 20 s of chat at 32 connections. At 35% the collections are
 * smaller and more frequent (about two a second at 4,000 requests/s, marking concurrently on V8's helper
 * threads): peak ~140 MiB for ~7% more CPU.
 *
 * Forcing collections with gc() (what this replaced) held memory as well, but a forced collection is a
 * memory-reducing one: it also drops the object shapes that optimised code depends on, so every one of them
 * deoptimised ~30 functions of the response path and TurboFan recompiled them: ~150 ms of compilation per second
 * of load. V8's own collections keep those shapes. The setting is process-wide, so the SQLite writer thread's heap
 * is bounded the same way. Works without --expose-gc; with it (npm start) one collection at start applies the
 * factor at once. 0 leaves the factor to V8.
 */
export function limitHeapGrowth(percent: number): void {
  bound = percent > 0 ? Math.round(percent) : 0;
  if (bound === 0) return;
  if (bulkBodies === 0) setGrowth(bound);
  // V8 reads the factor when a full collection sets the next limit; the limit set while the gateway's modules
  // loaded still has V8's own (a first burst of load grew RSS to ~170 MiB before a collection came; 142 with this).
  (globalThis as { gc?: () => void }).gc?.();
}

/** Request or response bodies of this many bytes or more are bulk bodies (holdForBulkBody). */
export const BULK_BODY_BYTES = 1024 * 1024;

/**
 * The factor while bulk bodies are in flight: 3x. For the proxy's ~20 MiB live that is ~40 MiB of room, more than
 * the ~32 MiB of buffers V8 lets pile up (see holdForBulkBody). 2x was too little (uploads as slow as with the
 * bound); 4x, V8's own largest, was no faster and held more memory (5 MB JSON bodies at one connection: peak RSS
 * 210 MiB at 4x, 185 at 3x, 155 with the bound).
 */
const BULK_GROWTH_PERCENT = 200;

/**
 * Widens the bound while a bulk body held whole (a spooled upload, a large image answer) is in flight, until the
 * returned function is called (more than once is harmless). Chat requests never hold it, so their peak memory
 * stays bounded; nor do bodies relayed as they arrive (streamed uploads, streamed answers), whose buffers young
 * collections free as they pass (bodyBytesRelayed below).
 *
 * Why: V8 counts the buffer memory allocated since the last full collection against the old generation's room,
 * and starts marking once that room is down to the young generation's size; buffers that died young are only
 * taken off by the next young collection, which V8 runs once ~32 MiB of them piled up. With the bound the room is
 * V8's minimum step, 16 MiB, so 8 MiB of socket and file buffers was enough: a 20 MiB upload (read from the
 * client, then read back from the spool file) set off 2-3 full collections of ~12 ms each. Measured at one
 * connection: 20 MiB uploads 11.7/s and ~115 ms of CPU each with the bound, ~23/s and ~41 ms with this; 5 MB JSON
 * requests (an image inlined) 31/s and 48 ms, 45/s and 24 ms, for ~30 MiB more peak memory while they flow.
 * V8's own factor (0) is no remedy: it adapts to the time spent collecting and stayed as narrow.
 */
export function holdForBulkBody(): () => void {
  if (bulkBodies++ === 0 && bound > 0) setGrowth(Math.max(bound, BULK_GROWTH_PERCENT));
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    if (--bulkBodies === 0 && bound > 0) setGrowth(bound);
  };
}

/** Bulk bodies in flight (for tests and diagnostics). */
export function bulkBodiesInFlight(): number {
  return bulkBodies;
}

function setGrowth(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

// ---- young collections after relayed bodies ----

/**
 * Bodies relayed as they arrive, and the young collection that frees their buffers.
 *
 * Each socket read of a body is a buffer of its own (up to 64 KiB) outside V8's heap. Relayed, it is garbage at
 * once, but its memory only returns when a young collection (a scavenge) finds it dead, and V8 runs one for such
 * buffers only once ~32 MiB of them have piled up. Meanwhile V8 counts them against the old generation's room, so
 * at the heap growth bound (limitHeapGrowth above) a 20 MiB upload streaming through set off a full collection
 * every ~20 MiB: 133 in 4 s of uploads, ~35 ms of CPU and an RSS rise of 1.6-1.9x the upload's size. A young
 * collection after every 4 MiB relayed frees the buffers while they are few, and costs little, as not much else
 * is live in the young generation: 9 full collections, ~15 ms per upload, RSS up 0.7-0.9x, 54-58 uploads/s
 * instead of 30-35 (bench/run.mjs, upload_c1, alternating runs; 8 MiB: 46-51/s; 2 MiB: no better than 4).
 *
 * Only bodies relayed chunk by chunk count (streamed uploads, streamed answers: SSE, audio). A body held whole
 * (read into memory, or spooled to a file) widens the heap growth bound instead (holdForBulkBody), which suits it
 * better: counted as well, spooled uploads were 5-10% slower and 5 MB JSON requests no faster. Small JSON requests
 * and answers do not count: their buffers are few, and V8's own young collections, driven by what a request
 * allocates, come far more often. Needs Node's `--expose-gc` (`npm start` passes it, as IdleMemoryRelease below
 * needs it too); without it, nothing runs.
 */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

type GcFunction = (options?: { type?: 'major' | 'minor' }) => void;

/**
 * V8's gc() without Node's --expose-gc, so that the gateway collects the same however it was started: the flag is
 * on while one new context is made, which then has gc(), and off again, so that no other context (nor a worker
 * thread) gets one.
 */
function exposedGc(): GcFunction {
  const own = (globalThis as { gc?: GcFunction }).gc;
  if (own) return own;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as GcFunction;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

let gc: GcFunction | undefined;
let counted = 0;
let uncollected = 0;

/** Counts `bytes` of a body just handed on (their buffers are garbage once written); collects once 4 MiB were. */
export function bodyBytesRelayed(bytes: number): void {
  counted += bytes;
  uncollected += bytes;
  if (uncollected < COLLECT_EVERY_BYTES) return;
  uncollected = 0;
  (gc ??= exposedGc())({ type: 'minor' });
}

/** Body bytes counted since start (for tests and diagnostics). */
export function relayedBodyBytes(): number {
  return counted;
}

// ---- what the data plane reports ----

/** Answers the data plane's reports (core/body-memory.ts) with the policy above. */
export const bodyMemoryPolicy: BodyMemoryObserver = {
  bodyHeld: (bytes) => (bytes >= BULK_BODY_BYTES ? holdForBulkBody() : undefined),
  bodySpooled: () => holdForBulkBody(),
  bodyRelayed: (bytes) => bodyBytesRelayed(bytes),
};
