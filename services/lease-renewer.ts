import type { LeaseRenewer } from '../contracts/limit-store';

/**
 * Renews the leases of open requests (stream slots, budget reservations) every third of the lease, so that a live
 * request keeps its lease through a missed renewal or two, while the leases of a dead instance lapse. One timer
 * for all open requests, running only while there are some.
 *
 * Each open request is kept with only what its renewal needs (`T`: the budgets or slot keys it holds), renewed by one
 * function for all. A closure per request would hold the request's whole context, and a long-lived Map that takes one
 * entry per request and deletes it at the end keeps its values alive through V8's young collections, so they are
 * promoted to the old generation: with a closure per request that is kilobytes per request for the full collector.
 */
export class LeaseRenewals<T> implements LeaseRenewer<T> {
  private readonly open = new Map<string, T>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly leaseMs: number,
    private readonly renew: (holder: string, held: T) => Promise<unknown>,
  ) {}

  /** Renews `held` for `holder` until remove(holder). */
  add(holder: string, held: T): void {
    this.open.set(holder, held);
    this.timer ??= setInterval(() => this.renewAll(), this.leaseMs / 3).unref();
  }

  remove(holder: string): void {
    this.open.delete(holder);
  }

  private renewAll(): void {
    // The timer stops at a tick that finds nothing open, not at each remove(): one request after another (a single
    // client) would otherwise create and clear a timer per request.
    if (this.open.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    // A failed renewal is left to the next one; the lease covers two more.
    for (const [holder, held] of this.open) this.renew(holder, held).catch(() => undefined);
  }
}
