/**
 * SQLite writes on a worker thread. better-sqlite3 is synchronous: a batch of usage records (rows, tags and
 * rollup upserts) written inline would take a large share of the proxy thread's CPU under load. The worker owns its
 * own connection to the same file (WAL: readers on the main thread are never blocked) and runs the very same
 * SqliteUsageStore write code, so behaviour and errors are identical; only the thread differs.
 *
 * Records cross the thread boundary packed by column (storage/packed-records.ts), or by structured clone when a
 * batch does not fit the packed shape. The worker is started on the first write, kept referenced only while a
 * write is pending (it never holds the process open), and restarted on the next write if it dies; a write in
 * flight when it dies fails like any store error, and the write queue retries it (inserts are idempotent by
 * record id).
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { UsageRecord } from '../records/usage-record';
import { packRecords, packedBuffers, type PackedRecords } from './packed-records';
import type { QuarantinedRecord } from './quarantine';
import type { InsertResult, MaintenanceOptions, MaintenanceResult } from './store';

/** What the main thread asks of the worker. */
export type WriterRequest =
  | { id: number; op: 'insertBatch'; records: readonly UsageRecord[] }
  /** The same, packed by column (storage/packed-records.ts): how every batch that fits the packed shape travels. */
  | { id: number; op: 'insertPacked'; packed: PackedRecords }
  | { id: number; op: 'touchKeys'; ids: readonly string[]; lastUsedAt: number }
  | { id: number; op: 'quarantine'; entries: readonly QuarantinedRecord[] }
  /** The background maintenance (storage/maintenance.ts): retention's batched deletes run on this connection. */
  | { id: number; op: 'maintain'; opts: MaintenanceOptions };

/** The worker's answer; an error keeps its code (SQLITE_CONSTRAINT... decides retry vs quarantine). */
export type WriterResponse =
  { id: number; result: unknown } | { id: number; error: { message: string; name: string; code?: string } };

export interface WriterThreadOptions {
  path: string;
  busyTimeoutMs: number;
  /** Page cache of the writer's connection, in KiB. */
  cacheKib: number;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

export class SqliteWriterThread {
  private worker: Worker | undefined;
  private exited: Promise<void> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(private readonly options: WriterThreadOptions) {}

  insertBatch(records: readonly UsageRecord[]): Promise<InsertResult> {
    const id = this.nextId++;
    const packed = packRecords(records);
    const request: WriterRequest = packed ? { id, op: 'insertPacked', packed } : { id, op: 'insertBatch', records };
    return this.call(request, packed && packedBuffers(packed)) as Promise<InsertResult>;
  }

  async quarantine(entries: readonly QuarantinedRecord[]): Promise<void> {
    await this.call({ id: this.nextId++, op: 'quarantine', entries });
  }

  async touchKeys(ids: readonly string[], lastUsedAt: number): Promise<void> {
    await this.call({ id: this.nextId++, op: 'touchKeys', ids, lastUsedAt });
  }

  /** Runs on the worker, between the inserts posted meanwhile (its batches pause, and each is one short transaction). */
  maintain(opts: MaintenanceOptions): Promise<MaintenanceResult> {
    return this.call({ id: this.nextId++, op: 'maintain', opts }) as Promise<MaintenanceResult>;
  }

  /** Lets pending writes finish, then stops the worker (its connection closes with it). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    worker.ref();
    worker.postMessage({ op: 'close' });
    await this.exited;
  }

  /** Posts a request; `transfer` lists buffers handed over to the worker instead of copied. */
  private call(request: WriterRequest, transfer?: ArrayBuffer[]): Promise<unknown> {
    const worker = this.worker ?? this.start();
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage(request, transfer);
    });
  }

  private start(): Worker {
    const worker = new Worker(join(__dirname, 'sqlite-writer-worker.js'), { workerData: this.options });
    worker.unref();
    worker.on('message', (msg: WriterResponse) => this.settle(msg));
    // An error event is followed by exit; the exit handler fails what is still pending.
    worker.on('error', () => undefined);
    this.exited = new Promise((resolve) =>
      worker.once('exit', (code) => {
        if (this.worker === worker) this.worker = undefined;
        const err = new Error(`SQLite writer thread exited (code ${code})`);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        resolve();
      }),
    );
    this.worker = worker;
    return worker;
  }

  private settle(msg: WriterResponse): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in msg)
      p.reject(Object.assign(new Error(msg.error.message), { name: msg.error.name, code: msg.error.code }));
    else p.resolve(msg.result);
  }
}
