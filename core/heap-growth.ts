import { setFlagsFromString } from 'node:v8';

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
  if (percent <= 0) return;
  setFlagsFromString(`--heap-growing-percent=${Math.round(percent)}`);
  // V8 reads the factor when a full collection sets the next limit; the limit set while the gateway's modules
  // loaded still has V8's own (a first burst of load grew RSS to ~170 MiB before a collection came; 142 with this).
  (globalThis as { gc?: () => void }).gc?.();
}
