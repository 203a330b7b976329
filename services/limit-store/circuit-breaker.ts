/**
 * Fails fast while a dependency is known to be down. A failure opens the circuit: callers check `open` and give
 * up at once instead of each waiting out a time-out. After `openMs` a probe runs in the background (one at a
 * time, never on a request's time): when it succeeds the circuit closes, when it fails it stays open for
 * another `openMs`.
 */
export class CircuitBreaker {
  private isOpen = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly openMs: number,
    private readonly probe: () => Promise<unknown>,
  ) {}

  get open(): boolean {
    return this.isOpen;
  }

  /** Records a failure: opens the circuit, unless a probe is already scheduled or under way. */
  trip(): void {
    this.isOpen = true;
    if (this.stopped) return;
    this.probeTimer ??= setTimeout(() => {
      this.probe().then(
        () => {
          this.probeTimer = undefined;
          this.isOpen = false;
        },
        () => {
          this.probeTimer = undefined;
          this.trip();
        },
      );
    }, this.openMs).unref();
  }

  /** No more probes (the store is closing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }
}
