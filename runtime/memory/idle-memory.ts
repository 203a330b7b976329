import type { Logger } from 'pino';

/** What the release needs to know of the proxy: how many requests it began, and how many are still open. */
export interface TrafficGauge {
  readonly started: number;
  readonly inflight: number;
}

/**
 * Gives memory back to the OS once traffic stops.
 *
 * Under load V8 lets its old generation grow well past what is live (garbage of finished requests waits for the
 * next full collection), and a collection only runs when something allocates: an idle gateway keeps the peak of
 * its last burst (measured after 25 s of mixed load: RSS stayed at 160 MiB with 46 MiB of heap used, 21 MiB of it
 * live). So after `idleMs` without a new request and with nothing in flight, two full GCs run, once per quiet
 * period: the first frees the garbage, the second compacts the pages it left sparse (one: RSS 171 -> 147 MiB,
 * two: 160 -> 125 MiB, heap 62 -> 28 MiB). The SQLite writer thread has a heap of its own and is asked to do the
 * same (with it: 149 -> 111 MiB). It needs Node's `--expose-gc` (`npm start` sets it); without it nothing runs.
 *
 * The check is a 1 s timer that reads two counters: nothing is added to the request path.
 *
 * What it costs comes later: a full collection with no request in flight lets the objects die that V8's optimized
 * code of the request path holds weakly (the maps and closures of the last requests), and that code is thrown away
 * with them. The next burst runs slower while ~230 functions are recompiled: measured on a 2-vCPU VM at 32
 * connections, +70 to +110 µs of the compiler thread's CPU and +40 to +130 µs of the proxy thread's per request over
 * the next 4 s, and at one connection a p99 1.4-2.6 ms higher for about 3 s. One collection, or an asynchronous one,
 * does the same (measured). Hence a quiet period (30 s by default) well past the lulls of steady traffic.
 */
export class IdleMemoryRelease {
  private timer: NodeJS.Timeout | undefined;
  private seen = 0;
  private quietSince = performance.now();
  private releasedAt = 0;

  constructor(
    private readonly traffic: TrafficGauge,
    private readonly idleMs: number,
    private readonly logger: Logger,
    /** The same for heaps of other threads (the SQLite writer's), run right after. */
    private readonly releaseElsewhere: () => Promise<void> | undefined = () => undefined,
  ) {}

  /** Node defines gc() only when started with --expose-gc. */
  private readonly gc = (globalThis as { gc?: () => void }).gc;

  /** False when there is nothing to do: disabled in the config, or no `--expose-gc`. */
  get enabled(): boolean {
    return this.idleMs > 0 && this.gc !== undefined;
  }

  start(): void {
    if (this.idleMs > 0 && this.gc === undefined) {
      this.logger.info('idle memory release is off, as are the young collections after relayed bodies (core/young-collection.ts): Node runs without --expose-gc (npm start passes it; server.idle_gc_ms: 0 silences this)');
    }
    if (!this.enabled || this.timer) return;
    this.seen = this.releasedAt = this.traffic.started;
    this.timer = setInterval(() => this.check(), Math.min(1000, this.idleMs)).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    const { started, inflight } = this.traffic;
    const now = performance.now();
    if (started !== this.seen || inflight > 0) {
      this.seen = started;
      this.quietSince = now;
      return;
    }
    if (started === this.releasedAt || now - this.quietSince < this.idleMs) return;
    this.releasedAt = started;
    const before = process.memoryUsage();
    const t0 = performance.now();
    this.gc!();
    this.gc!(); // see above: the second collection compacts
    const after = process.memoryUsage();
    this.logger.debug(
      { heapUsedMb: [mib(before.heapUsed), mib(after.heapUsed)], heapTotalMb: [mib(before.heapTotal), mib(after.heapTotal)], rssMb: mib(before.rss), gcMs: Math.round(performance.now() - t0) },
      'idle: full garbage collections to release memory',
    );
    this.releaseElsewhere()?.catch((err: unknown) => this.logger.debug({ err }, 'idle: releasing memory of another thread failed'));
  }
}

const mib = (bytes: number) => Math.round(bytes / 104857.6) / 10;
