import { getHeapSpaceStatistics } from 'node:v8';

type GcFunction = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => unknown;

/**
 * Keeps the garbage V8 lets pile up under load within a bound.
 *
 * V8 runs a full collection when its old generation reaches a limit it sets after the previous one, a multiple of
 * what was live: with the proxy's small live set (~23 MiB) it let the old generation grow past 40 MiB within seconds
 * of load and kept growing (usage records and in-flight requests live long enough to be promoted, then die).
 * Every second this reads the old generation's size; once it has grown by more than `headroomMb` since the last
 * collection it starts an asynchronous full collection: marking runs concurrently on V8's helper threads and the
 * main thread only finalises, so no request waits for it. Needs Node's `--expose-gc` (`npm start` passes it).
 */
export class HeapHeadroom {
  private timer: NodeJS.Timeout | undefined;
  /** Old generation bytes after the last collection (the lowest reading since). */
  private floor = Number.POSITIVE_INFINITY;
  private collecting = false;
  /** Collections started (for tests and logs). */
  collections = 0;

  constructor(
    private readonly headroomMb: number,
    private readonly gc: GcFunction | undefined = (globalThis as { gc?: GcFunction }).gc,
    /** Bytes in use in the old generation (tests pass their own readings). */
    private readonly read: () => number = oldGenerationBytes,
  ) {}

  get enabled(): boolean {
    return this.headroomMb > 0 && this.gc !== undefined;
  }

  start(): void {
    if (!this.enabled || this.timer) return;
    this.timer = setInterval(() => this.check(), 1000).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One reading; public for tests. */
  check(): void {
    const used = this.read();
    if (this.collecting) {
      this.collecting = false;
      this.floor = used; // the first reading after a collection is the new baseline
      return;
    }
    if (used < this.floor) this.floor = used; // V8's own collections lower it too
    if (used - this.floor > this.headroomMb * 1024 * 1024) {
      this.collecting = true;
      this.collections++;
      this.gc!({ type: 'major', execution: 'async' });
    }
  }
}

/** Bytes in use in the old generation (old space and large objects, where promoted garbage accumulates). */
export function oldGenerationBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === 'old_space' || space.space_name === 'large_object_space') bytes += space.space_used_size;
  }
  return bytes;
}
