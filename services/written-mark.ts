/** Records tracked one by one at the most; past it, the mark waits for the queues to drain. */
const MAX_TRACKED = 20_000;
/** How often, at the most, the queues are asked whether they are empty (their stats read the spill file's size). */
const IDLE_CHECK_MS = 1000;

/**
 * How far the usage records have reached the store: a time before which every enqueued record is written. The
 * budget plugin forgets a budget's in-memory spend only once the records behind it are in the store, where a
 * later read finds them. Records are tracked by id in enqueue order (a spilled record replayed later is the same
 * id); beyond MAX_TRACKED, or when a record left by a way not seen here (the quarantine file), the mark stays put
 * until the queues are found empty.
 *
 * Tracking costs a Map insert and delete per record, so it starts only once someone asks for the mark: until
 * then the mark is the time the tracker was made, and the first ask that finds the queues empty starts tracking.
 * A gateway without a budget never asks, and never pays.
 */
export class WrittenMark {
  /** Record id -> when it was enqueued, oldest first. */
  private readonly pending = new Map<string, number>();
  /** Set while not tracking: the mark stays there until the queues drain. */
  private untrackedSince: number | undefined = Date.now();
  private lastIdleCheck = 0;

  constructor(private readonly queuesEmpty: () => boolean) {}

  enqueued(record: { id: string }): void {
    if (this.untrackedSince !== undefined) return;
    if (this.pending.size >= MAX_TRACKED) {
      // Stop tracking; the mark stays at the oldest record not known to be written.
      this.untrackedSince = this.pending.values().next().value;
      this.pending.clear();
      return;
    }
    this.pending.delete(record.id); // a re-sent id counts from its latest enqueue
    this.pending.set(record.id, Date.now());
  }

  written(ids: Iterable<{ id: string } | string | null>): void {
    for (const r of ids) if (r !== null) this.pending.delete(typeof r === 'string' ? r : r.id);
  }

  /** Every record enqueued strictly before this time (epoch ms) is in the store; Infinity when none waits. */
  before(): number {
    if ((this.untrackedSince !== undefined || this.pending.size > 0) && this.drained()) {
      this.untrackedSince = undefined;
      this.pending.clear();
    }
    let mark = this.untrackedSince ?? Infinity;
    for (const enqueuedAt of this.pending.values()) {
      mark = Math.min(mark, enqueuedAt);
      break; // oldest first
    }
    return mark;
  }

  private drained(): boolean {
    const now = Date.now();
    if (now - this.lastIdleCheck < IDLE_CHECK_MS) return false;
    this.lastIdleCheck = now;
    return this.queuesEmpty();
  }
}
