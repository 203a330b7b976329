import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/**
 * Caps V8's young generation (its two semi-spaces) at YOUNG_GENERATION_CAP_BYTES, applied by the program itself so
 * that it holds however the gateway was started (part of the memory policy: runtime/memory-policy.ts).
 *
 * Why: V8 doubles the semi-spaces whenever much survives a young collection, up to 16 MiB each on Node 20 and 64 MiB
 * each on Node 24. Under load the requests in flight survive every young collection, so the young generation grows
 * to its maximum (32 MiB of resident memory on Node 20, up to 128 MiB on Node 24), nearly all of it the garbage of
 * finished requests. The cap is Node 20's own maximum: on Node 24 it gives back most of the peak RSS the larger
 * young generation costs, for little CPU; a smaller cap costs more in young collections than the bar allows
 * (docs/performance.md, Memory settings).
 *
 * Node's --max-semi-space-size is read only when the heap is made, too early for a program; but V8 reads its growth
 * factor (--semi-space-growth-factor) each time it grows the semi-spaces. So the cap sets the factor to 1 (no
 * growth) at once, and after each collection lets V8 double them again (its own factor, 2) only while double the
 * present size stays within the cap. The check runs after collections, not during them: growth is off when a long
 * task (the modules loading) collects many times, and one doubling at most can pass between two checks under load,
 * where each task is one request's work.
 *
 * Applied at the very start of the CLI (cli/early-memory.ts), before the modules load: V8 would grow the young
 * generation to its maximum while they do, and never shrinks it back under load. A --max-semi-space-size given to
 * Node (flags or NODE_OPTIONS) is the operator's choice and turns the cap off.
 */

/** Both semi-spaces together: 16 MiB each (Node's --max-semi-space-size=16, Node 20's default). */
export const YOUNG_GENERATION_CAP_BYTES = 32 * 1024 * 1024;

/** V8's own --semi-space-growth-factor. */
const V8_GROWTH_FACTOR = 2;

let observer: PerformanceObserver | undefined;
/** The factor last set; undefined before the cap starts. */
let factor: number | undefined;

/** Starts the cap (once; later calls do nothing). Returns false when the operator sized the semi-spaces. */
export function capYoungGeneration(): boolean {
  if (observer) return true;
  if (operatorSizedSemiSpaces()) return false;
  factor = 1;
  setFlagsFromString('--semi-space-growth-factor=1');
  observer = new PerformanceObserver(steer);
  observer.observe({ entryTypes: ['gc'] });
  return true;
}

/** The young generation's committed bytes (both semi-spaces). */
function youngGenerationBytes(): number {
  for (const space of getHeapSpaceStatistics()) if (space.space_name === 'new_space') return space.space_size;
  return 0;
}

/** After collections: V8's own factor while one doubling stays within the cap, else 1 (set only when it changes). */
function steer(): void {
  const next = youngGenerationBytes() * V8_GROWTH_FACTOR <= YOUNG_GENERATION_CAP_BYTES ? V8_GROWTH_FACTOR : 1;
  if (next === factor) return;
  factor = next;
  setFlagsFromString(`--semi-space-growth-factor=${next}`);
}

function operatorSizedSemiSpaces(): boolean {
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  return /--(max|min)[-_]semi[-_]space[-_]size/.test(given);
}
