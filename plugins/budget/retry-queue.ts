/**
 * Background jobs against a store that may be down, never on a request's time: a few run at once; a failed job
 * goes back in the queue and the whole queue pauses (a store that fails one read fails the next), for a delay
 * doubled per failure up to maxMs, and back to none after a success.
 */
export class RetryQueue<T> {
  private readonly waiting = new Set<T>();
  private running = 0;
  private delayMs = 0;
  private resumeAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly job: (item: T) => Promise<void>,
    /** Called when a job failed (the item is queued again), before the queue pauses. */
    private readonly failed: (item: T, err: unknown) => void,
    private readonly opts = { concurrency: 4, baseMs: 500, maxMs: 30_000 },
  ) {}

  /** True while the queue waits after a failure: a job added now will not run before it resumes. */
  get pausing(): boolean {
    return Date.now() < this.resumeAt;
  }

  add(item: T): void {
    this.waiting.add(item);
    this.pump();
  }

  delete(item: T): void {
    this.waiting.delete(item);
  }

  /** The items waiting for their turn (not those running). */
  queued(): IterableIterator<T> {
    return this.waiting.values();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private pump(): void {
    while (!this.stopped && this.running < this.opts.concurrency && this.waiting.size > 0) {
      const wait = this.resumeAt - Date.now();
      if (wait > 0) {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, wait).unref();
        return;
      }
      const item = this.waiting.values().next().value as T;
      this.waiting.delete(item);
      this.running++;
      this.job(item)
        .then(
          () => (this.delayMs = 0),
          (err: unknown) => {
            this.waiting.add(item);
            this.delayMs = Math.min(Math.max(this.opts.baseMs, this.delayMs * 2), this.opts.maxMs);
            this.resumeAt = Date.now() + this.delayMs;
            this.failed(item, err);
          },
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}
