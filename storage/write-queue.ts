/**
 * Keeps usage writes off the request path.
 *
 * enqueue() only pushes onto an in-memory queue (or, beyond `maxInMemory`, appends to the spill file) and never
 * calls the store. A background pump writes batches of `batchSize` as soon as one is full, and everything waiting
 * every `flushIntervalMs`. A failed (or timed-out) batch is retried with exponential backoff; meanwhile records
 * keep accumulating up to the memory bound, then spill to the JSONL file (storage/spill-file.ts), which is replayed
 * once the store accepts writes again and on the next start. close() drains everything, or parks it all in the
 * spill file if the store is still down. Inserts are idempotent by record id, so re-writes double-count nothing.
 *
 * A batch refused for its content (a constraint, an invalid value, an index row too large: see
 * storage/store-errors.ts) would be retried forever and block every record behind it, so it is split
 * instead: halves are written on their own until each refused record is alone; it goes to the
 * quarantine (storage/quarantine.ts) and every good record to the store. Spill files are replayed the
 * same way, and a spill line that is not a record is quarantined too. An unavailable store never
 * quarantines anything: its failures are retried.
 */
import { basename, dirname, join } from 'node:path';
import type { UsageRecord } from '../records/usage-record';
import { isolateRefused, type Isolated } from './isolate-refused';
import { Quarantine, quarantineRecord, quarantineSpillLine } from './quarantine';
import { RecordDeque } from './record-deque';
import { SpillFile, type SpillBatch } from './spill-file';
import type { StorageLogger, UsageStore } from './store';
import { isContentError, refusesWrites, summarizeStoreError } from './store-errors';
import { withTimeout } from './with-timeout';

export interface WriteQueueOptions {
  /** JSONL file for records beyond the memory bound and for what close() could not write. */
  spillPath: string;
  /** A second spill file (on another disk) for when spillPath cannot be written (storage.spill_fallback). */
  spillFallbackPath?: string;
  /**
   * At close, how long records that neither the store nor a spill file takes are kept and tried again before the
   * process may exit without them; default 5,000 ms.
   */
  closeRetryMs?: number;
  /**
   * JSONL file for refused records that the store's quarantine table refuses too (storage/quarantine.ts); default
   * <spill name>.quarantine.jsonl next to the spill file.
   */
  quarantinePath?: string;
  /** Records per insertBatch, default 500. */
  batchSize?: number;
  /** Longest a record waits in memory while the store is healthy, default 1000 ms. */
  flushIntervalMs?: number;
  /** Records held in memory (including the batch being retried) before spilling, default 10,000. */
  maxInMemory?: number;
  /** First retry delay after a failure, doubled up to retryMaxMs (with jitter); default 500 ms. */
  retryBaseMs?: number;
  /** Default 30,000 ms. */
  retryMaxMs?: number;
  /** A write not settled after this long counts as failed (a hung store must not stall the queue), default 30,000 ms. */
  writeTimeoutMs?: number;
  logger?: StorageLogger;
}

export interface WriteQueueStats {
  /** Records passed to enqueue(). */
  queued: number;
  /** Records in successful insertBatch calls (replays included; a record may be re-written after a partial failure). */
  written: number;
  /** Records appended to the spill file. */
  spilled: number;
  /** Records read back from the spill file and written. */
  replayed: number;
  /** Failed or timed-out insertBatch calls. */
  failures: number;
  /** Records the store refused for their content, quarantined (in its quarantine table or in the file). */
  quarantined: number;
  /** Of these, the ones in the quarantine file. */
  quarantinedToFile: number;
  /** Records waiting in memory now. */
  inMemory: number;
  /** Spilled records wait for replay. */
  spillPending: boolean;
  /** Size of the spill files waiting for replay, bytes. */
  spillBytes: number;
  /** Records kept in memory because no spill file could be written. */
  spillHeld: number;
  /** Records lost because no spill file could be written and the memory held for them was full. */
  spillDropped: number;
  /** The error code while the store refuses writes (full, read-only: storage/store-errors.ts), else null. */
  writesRefused: string | null;
}

/** The store as the queue uses it; without quarantine(), refused records go to the quarantine file. */
type BatchWriter = Pick<UsageStore, 'insertBatch'> & Partial<Pick<UsageStore, 'quarantine'>>;

/**
 * What a pump run writes besides full batches: 'full' nothing more (more records are on their way), 'waiting' the
 * records queued when the run starts (the interval tick), 'all' until memory is empty (flush, shutdown). The tick
 * must not chase the records that arrive while it writes: under steady load it never caught up, and wrote batch
 * after batch of 10-30 records (each a commit and a round trip to the writer) instead of waiting for a full one.
 */
type Drain = 'full' | 'waiting' | 'all';

export class UsageWriteQueue {
  private readonly mem = new RecordDeque();
  /** The batch that failed last, written first on the next attempt. */
  private retry: UsageRecord[] | null = null;
  private inflight = 0;
  private readonly spill: SpillFile;
  private readonly opts: Required<Omit<WriteQueueOptions, 'logger' | 'quarantinePath' | 'spillFallbackPath'>>;
  private readonly log?: StorageLogger;
  private readonly counters = { queued: 0, written: 0, spilled: 0, replayed: 0, failures: 0 };
  private readonly quarantine: Quarantine;

  /** Pump runs are serialised on this chain; `busy` counts runs queued or running. */
  private chain: Promise<unknown> = Promise.resolve();
  private busy = 0;
  private attempt = 0;
  private backoffUntil = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly ticker: NodeJS.Timeout;
  private kickScheduled = false;
  private spilling = false;
  private closing: Promise<void> | null = null;
  private closed = false;
  private writesRefused: string | null = null;

  constructor(
    private readonly store: BatchWriter,
    opts: WriteQueueOptions,
  ) {
    this.opts = {
      spillPath: opts.spillPath,
      batchSize: opts.batchSize ?? 500,
      flushIntervalMs: opts.flushIntervalMs ?? 1000,
      maxInMemory: opts.maxInMemory ?? 10_000,
      retryBaseMs: opts.retryBaseMs ?? 500,
      retryMaxMs: opts.retryMaxMs ?? 30_000,
      writeTimeoutMs: opts.writeTimeoutMs ?? 30_000,
      closeRetryMs: opts.closeRetryMs ?? 5000,
    };
    if (this.opts.batchSize < 1 || this.opts.maxInMemory < this.opts.batchSize)
      throw new Error('need 1 <= batchSize <= maxInMemory');
    this.log = opts.logger;
    this.spill = new SpillFile(this.opts.spillPath, {
      fallbackPath: opts.spillFallbackPath,
      maxHeld: this.opts.maxInMemory * 10,
      log: this.log,
    });
    const quarantinePath =
      opts.quarantinePath ?? join(dirname(opts.spillPath), `${basename(opts.spillPath, '.jsonl')}.quarantine.jsonl`);
    this.quarantine = new Quarantine(
      store,
      quarantinePath,
      (write) => withTimeout(write(), this.opts.writeTimeoutMs),
      this.log,
    );
    // Timers are unref'd: a pending flush never keeps the process alive (shutdown calls close()).
    this.ticker = setInterval(() => this.tick(), this.opts.flushIntervalMs).unref();
    if (this.spill.pending()) {
      this.log?.info({ path: this.opts.spillPath }, 'replaying usage spill file from a previous run');
      setImmediate(() => this.tick()).unref();
    }
  }

  /** Synchronous and O(1): never waits for (or calls into) the store. */
  enqueue(record: UsageRecord): void {
    this.counters.queued++;
    if (this.closed) {
      // Late records after shutdown still must not be lost.
      this.spill.appendSync([record]);
      this.counters.spilled++;
      return;
    }
    if (this.inMemory() >= this.opts.maxInMemory) {
      if (!this.spilling)
        this.log?.warn(
          { path: this.opts.spillPath, inMemory: this.inMemory() },
          'usage store behind: spilling records to disk',
        );
      this.spilling = true;
      this.spill.append([record]);
      this.counters.spilled++;
      return;
    }
    this.mem.push(record);
    if (
      this.mem.length >= this.opts.batchSize &&
      !this.kickScheduled &&
      this.busy === 0 &&
      Date.now() >= this.backoffUntil
    ) {
      // setImmediate: the store's work (synchronous for SQLite) must not run inside enqueue's caller.
      this.kickScheduled = true;
      setImmediate(() => {
        this.kickScheduled = false;
        if (!this.closing) void this.run('full');
      });
    }
  }

  /** Writes everything now (memory, then the spill file); rejects if the store fails, records stay queued. */
  async flush(): Promise<void> {
    if (!(await this.run('all'))) throw new Error('usage store unavailable: records remain queued for retry');
  }

  /** Drains everything, or leaves what could not be written in the spill file. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  stats(): WriteQueueStats {
    return {
      ...this.counters,
      ...this.quarantine.stats(),
      inMemory: this.inMemory(),
      spillPending: this.spill.pending(),
      spillBytes: this.spill.bytes(),
      spillHeld: this.spill.stats().held,
      spillDropped: this.spill.stats().dropped,
      writesRefused: this.writesRefused,
    };
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.ticker);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const drained = await this.run('all').catch(() => false);
    const rest = [...(this.retry ?? []), ...this.mem.takeAll()];
    this.retry = null;
    this.spill.append(rest);
    this.counters.spilled += rest.length;
    this.closed = true;
    await this.spill.close();
    await this.keepHeldWhileThereIsTime();
    const held = this.spill.stats().held;
    if (held > 0) {
      this.log?.error(
        { records: held, path: this.opts.spillPath, fallback: this.opts.spillPath !== this.spill.writtenTo() },
        'usage store and spill file both unavailable at shutdown: these records are lost when the process exits',
      );
    } else if (rest.length > 0 && !drained) {
      this.log?.warn(
        { records: rest.length, path: this.spill.writtenTo() },
        'usage store unavailable at shutdown: records left in the spill file',
      );
    }
  }

  /** Records no spill file took: tried on the store, then on disk again, until closeRetryMs has passed. */
  private async keepHeldWhileThereIsTime(): Promise<void> {
    const deadline = Date.now() + this.opts.closeRetryMs;
    while (this.spill.stats().held > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, this.opts.closeRetryMs)));
      const held = this.spill.takeHeld();
      const left = await this.write(held);
      this.counters.replayed += held.length - left.length;
      this.spill.append(left);
      await this.spill.close();
    }
  }

  private inMemory(): number {
    return this.mem.length + (this.retry?.length ?? 0) + this.inflight;
  }

  /** Interval tick: write what waits now (not what arrives meanwhile), unless backing off after a failure. */
  private tick(): void {
    if (this.busy > 0 || this.closing || Date.now() < this.backoffUntil) return;
    if (this.mem.length > 0 || this.retry || this.spill.pending()) void this.run('waiting');
  }

  /** Queues one pump run after the current one; resolves true when what it was asked to write was written. */
  private run(drain: Drain): Promise<boolean> {
    this.busy++;
    const p = this.chain.then(() => this.pump(drain)).finally(() => this.busy--);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async pump(drain: Drain): Promise<boolean> {
    // 'waiting' owes the records queued when the run starts; writing the oldest `owed` covers them (FIFO).
    let owed = drain === 'all' ? Infinity : drain === 'waiting' ? this.mem.length : 0;
    for (;;) {
      if (this.retry || this.mem.length >= this.opts.batchSize || (owed > 0 && this.mem.length > 0)) {
        owed -= this.retry ? 0 : Math.min(this.opts.batchSize, this.mem.length);
        if (!(await this.writeFromMemory())) return false;
        continue;
      }
      // A partial batch waits for the next tick or for more records; spilled records are replayed meanwhile.
      if (!this.spill.pending()) return true;
      if (!(await this.replaySpill())) return false;
    }
  }

  private async writeFromMemory(): Promise<boolean> {
    const batch = this.retry ?? this.mem.take(this.opts.batchSize);
    this.retry = null;
    this.inflight = batch.length;
    const left = await this.write(batch);
    this.inflight = 0;
    if (left.length > 0) this.retry = left;
    return left.length === 0;
  }

  /** Replays spill files batch by batch, writing full in-memory batches in between. */
  private async replaySpill(): Promise<boolean> {
    // Records no spill file could take come first: they are only in memory.
    const held = this.spill.takeHeld();
    const left = await this.write(held);
    this.counters.replayed += held.length - left.length;
    if (left.length > 0) {
      this.spill.append(left);
      return false;
    }
    for (const file of await this.spill.takeForReplay()) {
      for await (const batch of this.spill.read(file, this.opts.batchSize)) {
        while (this.mem.length >= this.opts.batchSize) if (!(await this.writeFromMemory())) return false;
        // On a failure the file stays, and is replayed again later (what was written already is skipped by id).
        if (!(await this.quarantineUnreadable(batch))) return false;
        if ((await this.write(batch.records)).length > 0) return false;
        this.counters.replayed += batch.records.length;
      }
      await this.spill.remove(file);
      this.log?.info({ file }, 'usage spill file replayed');
    }
    if (!this.spill.pending()) this.spilling = false;
    return true;
  }

  /** Quarantines the lines of a spill file that are not records; false when the store was unavailable. */
  private async quarantineUnreadable(batch: SpillBatch): Promise<boolean> {
    if (batch.unreadable.length === 0) return true;
    try {
      await this.quarantine.add(batch.unreadable.map(({ line, err }) => quarantineSpillLine(line, err)));
      return true;
    } catch (err) {
      this.failed(err, []);
      return false;
    }
  }

  /** Writes a batch; returns the records still to be written (none when all were stored or quarantined). */
  private async write(batch: UsageRecord[]): Promise<UsageRecord[]> {
    if (batch.length === 0) return batch;
    try {
      await this.insert(batch);
    } catch (err) {
      if (!isContentError(err)) return this.failed(err, batch);
      const { code, message } = summarizeStoreError(err);
      this.log?.warn(
        { records: batch.length, errorCode: code, error: message },
        'usage store refused a batch for its content: splitting it to quarantine the refused record(s)',
      );
      const found: Isolated = { refused: [], left: [] };
      await isolateRefused(batch, err, (part) => this.insert(part), found);
      const refused = found.refused.map((r) => r.record);
      // While the store is unavailable, refused records wait with the rest (they are split out again on the retry).
      if (found.failure !== undefined) return this.failed(found.failure, [...refused, ...found.left]);
      try {
        await this.quarantine.add(found.refused.map((r) => quarantineRecord(r.record, r.err)));
      } catch (e) {
        return this.failed(e, refused);
      }
    }
    if (this.attempt > 0) this.log?.info({ attempts: this.attempt }, 'usage store writes recovered');
    this.attempt = 0;
    this.writesRefused = null;
    this.backoffUntil = 0;
    return [];
  }

  private async insert(batch: UsageRecord[]): Promise<void> {
    await withTimeout(
      Promise.resolve().then(() => this.store.insertBatch(batch)),
      this.opts.writeTimeoutMs,
    );
    this.counters.written += batch.length;
  }

  /** Counts a failed write and schedules the retry; returns the batch (still to be written). */
  private failed(err: unknown, batch: UsageRecord[]): UsageRecord[] {
    this.counters.failures++;
    this.attempt++;
    const delay =
      Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** Math.min(this.attempt - 1, 30)) *
      (0.5 + Math.random() / 2);
    this.backoffUntil = Date.now() + delay;
    const { code, message } = summarizeStoreError(err);
    if (refusesWrites(err)) this.writesRefused = code;
    this.log?.warn(
      { errorCode: code, error: message, records: batch.length, attempt: this.attempt, retryInMs: Math.round(delay) },
      'usage store write failed',
    );
    if (!this.closing) {
      if (this.retryTimer) clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.backoffUntil = 0;
        this.tick();
      }, delay).unref();
    }
    return batch;
  }
}
