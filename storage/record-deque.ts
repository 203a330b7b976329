/** FIFO of records with O(1) amortised push and batch take (Array#shift would be O(n) per record). */
import type { UsageRecord } from '../records/usage-record';

export class RecordDeque {
  private items: UsageRecord[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(r: UsageRecord): void {
    this.items.push(r);
  }

  /** Removes and returns up to n records from the front. */
  take(n: number): UsageRecord[] {
    const out = this.items.slice(this.head, this.head + n);
    this.head += out.length;
    // Drop the consumed prefix once it dominates, so memory follows the live length.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    }
    return out;
  }

  takeAll(): UsageRecord[] {
    return this.take(this.length);
  }
}
