/**
 * Renews the leases of open requests (stream slots, budget reservations) every third of the lease, so that a live
 * request keeps its lease through a missed renewal or two, while the leases of a dead instance lapse. One timer
 * for all open requests, running only while there are some.
 *
 * The open requests are kept in a plain object used as a dictionary, not a Map. A long-lived Map (or Set) that
 * takes one entry per request and deletes it at the end keeps what its entries referenced alive through V8's
 * young collections: measured with --trace-gc-nvp, every value churned through such a Map was promoted to the old
 * generation, a dictionary object promoted none of it. Here each value is a renewal closure that holds the
 * request's context, so the Map promoted ~3 KB per request, and the old generation filled up six times faster
 * (docs/performance.md, twelfth round).
 */
export class LeaseRenewer {
  private readonly open: Record<string, () => Promise<unknown>> = Object.create(null);
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly leaseMs: number) {}

  /** Renews with `renew` until remove(holder). */
  add(holder: string, renew: () => Promise<unknown>): void {
    if (!(holder in this.open)) this.count++;
    this.open[holder] = renew;
    this.timer ??= setInterval(() => this.renewAll(), this.leaseMs / 3).unref();
  }

  remove(holder: string): void {
    if (!(holder in this.open)) return;
    delete this.open[holder];
    this.count--;
  }

  private renewAll(): void {
    // The timer stops at a tick that finds nothing open, not at each remove(): one request after another (a single
    // client) would otherwise create and clear a timer per request.
    if (this.count === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    // A failed renewal is left to the next one; the lease covers two more.
    for (const holder in this.open) this.open[holder]().catch(() => undefined);
  }
}
