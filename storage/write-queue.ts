/**
 * Keeps usage writes off the request path.
 *
 * enqueue() only pushes onto an in-memory queue (or, beyond `maxInMemory`, appends to the spill
 * file) and never calls the store. A background pump writes batches of `batchSize` as soon as
 * one is full, and everything waiting every `flushIntervalMs`. A failed (or timed-out) batch is
 * retried with exponential backoff; meanwhile records keep accumulating up to the memory bound,
 * then spill to the JSONL file, which is replayed once the store accepts writes again and on the
 * next start. close() drains everything, or parks it all in the spill file if the store is
 * still down. Inserts are idempotent by record id, so any re-write double-counts nothing.
 *
 * A batch refused for a data reason (a constraint or an invalid value, see isDataError) would be
 * retried forever and block every record behind it, so it is split instead: halves are written on
 * their own until each poison record is alone; it goes to the dead-letter file (same JSONL format
 * as the spill file, logged as an error) and every good record to the store. Connectivity failures
 * never dead-letter anything: they are retried.
 */
import { appendFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { UsageRecord } from '../core/usage';
import { recordToJson } from './record-json';
import { RecordDeque } from './record-deque';
import { SpillFile } from './spill-file';
import type { StorageLogger, UsageStore } from './store';

export interface WriteQueueOptions {
  /** JSONL file for records beyond the memory bound and for what close() could not write. */
  spillPath: string;
  /** JSONL file for records the store refuses for a data reason; default <spill name>.dead-letter.jsonl next to it. */
  deadLetterPath?: string;
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
  /** Records the store refused for a data reason, isolated into the dead-letter file. */
  deadLettered: number;
  /** Records waiting in memory now. */
  inMemory: number;
  /** Spilled records wait for replay. */
  spillPending: boolean;
}

type BatchWriter = Pick<UsageStore, 'insertBatch'>;

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
  private readonly opts: Required<Omit<WriteQueueOptions, 'logger' | 'deadLetterPath'>>;
  private readonly log?: StorageLogger;
  private readonly counters = { queued: 0, written: 0, spilled: 0, replayed: 0, failures: 0, deadLettered: 0 };
  private readonly deadLetterPath: string;

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

  constructor(
    private readonly store: BatchWriter,
    opts: WriteQueueOptions,
  ) {
    this.deadLetterPath = opts.deadLetterPath ?? join(dirname(opts.spillPath), `${basename(opts.spillPath, '.jsonl')}.dead-letter.jsonl`);
    this.opts = {
      spillPath: opts.spillPath,
      batchSize: opts.batchSize ?? 500,
      flushIntervalMs: opts.flushIntervalMs ?? 1000,
      maxInMemory: opts.maxInMemory ?? 10_000,
      retryBaseMs: opts.retryBaseMs ?? 500,
      retryMaxMs: opts.retryMaxMs ?? 30_000,
      writeTimeoutMs: opts.writeTimeoutMs ?? 30_000,
    };
    if (this.opts.batchSize < 1 || this.opts.maxInMemory < this.opts.batchSize) throw new Error('need 1 <= batchSize <= maxInMemory');
    this.log = opts.logger;
    this.spill = new SpillFile(this.opts.spillPath, this.log);
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
      if (!this.spilling) this.log?.warn({ path: this.opts.spillPath, inMemory: this.inMemory() }, 'usage store behind: spilling records to disk');
      this.spilling = true;
      this.spill.append([record]);
      this.counters.spilled++;
      return;
    }
    this.mem.push(record);
    if (this.mem.length >= this.opts.batchSize && !this.kickScheduled && this.busy === 0 && Date.now() >= this.backoffUntil) {
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
    return { ...this.counters, inMemory: this.inMemory(), spillPending: this.spill.pending() };
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.ticker);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const drained = await this.run('all').catch(() => false);
    const rest = [...(this.retry ?? []), ...this.mem.takeAll()];
    this.retry = null;
    if (rest.length) {
      this.spill.append(rest);
      this.counters.spilled += rest.length;
      if (!drained) this.log?.warn({ records: rest.length, path: this.opts.spillPath }, 'usage store unavailable at shutdown: records left in the spill file');
    }
    this.closed = true;
    await this.spill.close();
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
    for (const file of await this.spill.takeForReplay()) {
      for await (const batch of this.spill.read(file, this.opts.batchSize)) {
        while (this.mem.length >= this.opts.batchSize) if (!(await this.writeFromMemory())) return false;
        if ((await this.write(batch)).length > 0) return false; // the file stays; replayed again later
        this.counters.replayed += batch.length;
      }
      await this.spill.remove(file);
      this.log?.info({ file }, 'usage spill file replayed');
    }
    if (!this.spill.pending()) this.spilling = false;
    return true;
  }

  /** Writes a batch; returns the records still to be written (none when all were stored or dead-lettered). */
  private async write(batch: UsageRecord[]): Promise<UsageRecord[]> {
    let left = batch;
    try {
      await this.insert(batch);
      left = [];
    } catch (err) {
      if (!isDataError(err)) return this.failed(err, batch);
      this.log?.warn({ err, records: batch.length }, 'usage store refused a batch for a data reason: isolating the bad record(s)');
      left = await this.isolate(batch, err);
      if (left.length > 0) return left; // a connectivity failure interrupted the split (already counted)
    }
    if (this.attempt > 0) this.log?.info({ attempts: this.attempt }, 'usage store writes recovered');
    this.attempt = 0;
    this.backoffUntil = 0;
    return left;
  }

  private async insert(batch: UsageRecord[]): Promise<void> {
    await withTimeout(
      Promise.resolve().then(() => this.store.insertBatch(batch)),
      this.opts.writeTimeoutMs,
    );
    this.counters.written += batch.length;
  }

  /**
   * Splits a batch the store refused for a data reason until every poison record is alone, writing the good
   * halves as it goes; a lone refused record goes to the dead-letter file. Returns what is left when a
   * connectivity failure stopped the split (it is retried as usual).
   */
  private async isolate(batch: UsageRecord[], err: unknown): Promise<UsageRecord[]> {
    if (batch.length === 1) {
      this.deadLetter(batch[0], err);
      return [];
    }
    const mid = Math.ceil(batch.length / 2);
    const left: UsageRecord[] = [];
    for (const half of [batch.slice(0, mid), batch.slice(mid)]) {
      if (left.length > 0) {
        left.push(...half);
        continue;
      }
      try {
        await this.insert(half);
      } catch (e) {
        left.push(...(isDataError(e) ? await this.isolate(half, e) : this.failed(e, half)));
      }
    }
    return left;
  }

  /** Parks a record the store will never take; an operator can fix it and move the file to the spill path to replay it. */
  private deadLetter(record: UsageRecord, err: unknown): void {
    try {
      appendFileSync(this.deadLetterPath, `${recordToJson(record)}\n`);
    } catch (e) {
      this.log?.error({ err: e, recordId: record.id, path: this.deadLetterPath }, 'usage dead-letter file write failed: record lost');
      return;
    }
    this.counters.deadLettered++;
    this.log?.error({ err, recordId: record.id, path: this.deadLetterPath }, 'usage record refused by the store: written to the dead-letter file');
  }

  /** Counts a failed write and schedules the retry; returns the batch (still to be written). */
  private failed(err: unknown, batch: UsageRecord[]): UsageRecord[] {
    this.counters.failures++;
    this.attempt++;
    const delay = Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** Math.min(this.attempt - 1, 30)) * (0.5 + Math.random() / 2);
    this.backoffUntil = Date.now() + delay;
    this.log?.warn({ err, records: batch.length, attempt: this.attempt, retryInMs: Math.round(delay) }, 'usage store write failed');
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

/**
 * True for errors the database raises because of the records (retrying the same batch fails the same way):
 * PostgreSQL SQLSTATE classes 22 (data exception, e.g. a NUL byte in text) and 23 (integrity constraint);
 * SQLite constraint, datatype mismatch, too big, range. Everything else (connectivity, locks, time-outs, a
 * closed store, unknown errors) is retried, never dead-lettered.
 */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return /^2[23][0-9A-Z]{3}$/.test(code) || /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(code);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`usage store write timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
