/**
 * Values by holder (a request id) that live as long as a request: open leases, reservations, renewals.
 *
 * A dictionary object, not a Map. A long-lived Map (or Set) that takes one entry per request and deletes it at the
 * end keeps what its entries referenced alive through V8's young collections (Node 20, V8 11.3): measured with
 * --trace-gc-nvp, every value churned through such a Map was promoted to the old generation, while a dictionary
 * object promoted none of it. When the value holds a request's context (a renewal closure), that is kilobytes per
 * request and a full collection every fraction of a second under load (docs/performance.md, twelfth round).
 */
export class HolderTable<V> {
  private readonly entries: Record<string, V> = Object.create(null);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(holder: string): V | undefined {
    return this.entries[holder];
  }

  has(holder: string): boolean {
    return holder in this.entries;
  }

  set(holder: string, value: V): void {
    if (!(holder in this.entries)) this.count++;
    this.entries[holder] = value;
  }

  delete(holder: string): boolean {
    if (!(holder in this.entries)) return false;
    delete this.entries[holder];
    this.count--;
    return true;
  }

  /** The entries; deleting the current entry or one not yet visited while iterating is safe (it is then skipped). */
  *[Symbol.iterator](): IterableIterator<[string, V]> {
    for (const holder in this.entries) yield [holder, this.entries[holder]];
  }
}
