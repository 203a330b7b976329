import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BodyMemoryObserver } from '../core/body-memory';

/**
 * The gateway's memory policy, in one place, applied by the program itself so that it is the same however the
 * gateway was started (no Node flag needed): how far V8's heap may grow (limitHeapGrowth, widened by holdForBulkBody),
 * young collections after bodies relayed chunk by chunk (bodyBytesRelayed), how large the young generation may grow
 * (runtime/young-generation.ts, set from the CLI's first line), and how many request-body bytes may be
 * held in memory at once (runtime/buffered-body-cap.ts). The data plane only reports what it does with bodies and asks the cap
 * before holding one (core/body-memory.ts); the runtime installs bodyMemoryPolicy as the observer of those reports
 * and gives the proxy its cap. Each tuning part stays because it pays in an A/B of the benchmark
 * (docs/performance.md, Memory settings).
 */

type GcFunction = (options?: { type?: 'major' | 'minor' }) => void;

let gc: GcFunction | undefined;

/**
 * V8's gc() without Node's --expose-gc: the flag is on while one new context is made, which then has gc(), and off
 * again, so that no other context (nor a worker thread) gets one.
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

// ---- heap growth ----

/** The percentage set by limitHeapGrowth; 0 = V8's own factor. */
let bound = 0;
/** Bulk bodies in flight (holdForBulkBody). */
let bulkBodies = 0;

/**
 * Bounds how far the heap may grow between two full collections: V8 starts its next one once the old generation
 * reaches `percent`% more than what the last one left live (its `--heap-growing-percent`). Left to itself, V8 lets
 * a small heap grow up to 4x, and under load the garbage of finished requests (promoted while they were in flight)
 * piles up to that. The setting is process-wide, so the SQLite writer thread's heap is bounded the same way.
 * 0 leaves the factor to V8.
 *
 * Forced full collections (gc()) would hold memory too, but each is a memory-reducing one that drops the object
 * shapes optimised code depends on, so the request path would be recompiled after every one; V8's own keep them.
 */
export function limitHeapGrowth(percent: number): void {
  bound = percent > 0 ? Math.round(percent) : 0;
  if (bound === 0) return;
  if (bulkBodies === 0) setGrowth(bound);
  // V8 reads the factor when a full collection sets the next limit; the limit set while the modules loaded has
  // V8's own, so one collection now (before any request: nothing to recompile) applies the bound from the start.
  (gc ??= exposedGc())();
}

/** Request or response bodies of this many bytes or more are bulk bodies (holdForBulkBody). */
export const BULK_BODY_BYTES = 1024 * 1024;

/** The factor while bulk bodies are in flight: 3x, room for the buffers V8 lets pile up before a young collection. */
const BULK_GROWTH_PERCENT = 200;

/**
 * Widens the bound while a bulk body held whole (a spooled upload, a large image answer) is in flight, until the
 * returned function is called (more than once is harmless). Chat requests never hold it, so their peak memory
 * stays bounded; nor do bodies relayed as they arrive, whose buffers young collections free as they pass.
 *
 * Why: V8 counts buffer memory allocated since the last full collection against the old generation's room, and
 * buffers that died young only come off at the next young collection; at the bound the room is so small that the
 * socket and file buffers of one large body set off full collection after full collection. V8's own factor is no
 * remedy: it adapts to the time spent collecting and stays as narrow.
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
 * Each socket read of a body relayed as it arrives is a buffer of its own outside V8's heap, garbage once written,
 * but its memory only returns when a young collection finds it dead, and V8 runs one for such buffers only once
 * ~32 MiB of them have piled up, counting them meanwhile against the old generation's room (so at the heap growth
 * bound, a streamed upload sets off full collections). A young collection after every 4 MiB relayed frees them while
 * they are few, and costs little, as not much else is live in the young generation.
 *
 * Only bodies relayed chunk by chunk count (streamed uploads, streamed answers). A body held whole widens the bound
 * instead (holdForBulkBody); small JSON bodies do not count: V8's own young collections, driven by what a request
 * allocates, come far more often than their few buffers would call for.
 */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

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
