import { HolderTable } from './holder-table';

/**
 * Renews the leases of open requests (stream slots, budget reservations) every third of the lease, so that a live
 * request keeps its lease through a missed renewal or two, while the leases of a dead instance lapse. One timer
 * for all open requests, running only while there are some.
 */
export class LeaseRenewer {
  /** Each request's renewal closure, which holds its context: a HolderTable, not a Map (holder-table.ts says why). */
  private readonly open = new HolderTable<() => Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly leaseMs: number) {}

  /** Renews with `renew` until remove(holder). */
  add(holder: string, renew: () => Promise<unknown>): void {
    this.open.set(holder, renew);
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
    for (const [, renew] of this.open) renew().catch(() => undefined);
  }
}
