/**
 * Reads of the control plane (admin API, dashboard) on a worker thread of their own, each with a time limit.
 *
 * better-sqlite3 is synchronous: a dashboard grouping of a few seconds, run on the proxy's thread, held every proxied
 * request for as long. Here the worker owns its own read connection (storage/read-connection.ts) and runs named
 * operations (`serveReads` of storage/serve-reads.ts, given by the worker's script); the proxy's thread only posts a
 * request and receives the answer. An answer built as bytes (a JSON body) is transferred, not copied, so that a large
 * one costs this thread nothing to decode or serialise.
 *
 * Time limit: a read still unanswered `timeoutMs` after it was asked fails with QueryTimeoutError. A database that
 * cancels its own statements past the limit (PostgreSQL's statement_timeout) answers that itself, and the worker lives
 * on; `graceMs` later the thread is terminated all the same (a read of several statements, each under the limit).
 * SQLite cannot be
 * interrupted from outside its thread (better-sqlite3 does not expose sqlite3_interrupt), so a read running past its
 * limit has its worker terminated; the reads queued or running beside it go to a new worker. A terminated worker still
 * finishes the SQLite call it is in (termination takes effect when it returns to JavaScript): while one does, no other
 * is terminated, so that at most two reader threads (and two heaps of `heapMb`) ever exist; reads then wait, within
 * their own time limit. A read that needs more heap than the worker may use stops that worker alone: the process keeps
 * its memory and serves on.
 *
 * The worker starts on the first read, holds no reference on the process, and stops after IDLE_STOP_MS without reads
 * (its heap and page cache go with it).
 *
 * Streamed reads (`stream`): the worker's operation is an async generator of byte chunks. Its first chunk is asked like
 * any read (in turn, within the time limit); each next one when the consumer asks for it, the worker making one more
 * ahead meanwhile, so that it holds the generator's state and a chunk or two, never the answer whole. Between two
 * chunks a stream takes no turn: an export that a slow client reads never holds back the other reads. Cancelling
 * returns the generator on the worker; a worker that stops (terminated, out of heap, closed) fails its open streams.
 */
import { Worker } from 'node:worker_threads';
import type { ReadRequest as Request, ReadResponse as Response } from './serve-reads';

export class QueryTimeoutError extends Error {
  constructor(
    readonly timeoutMs: number,
    message = `the query ran for more than ${timeoutMs} ms and was cancelled`,
  ) {
    super(message);
    this.name = 'QueryTimeoutError';
  }
}

export class QueryTooLargeError extends Error {
  constructor(readonly heapMb: number) {
    super(`the query needed more than the ${heapMb} MiB of memory the reader thread may use and was stopped`);
    this.name = 'QueryTooLargeError';
  }
}

export interface ReaderThreadOptions {
  /** The worker's script: it calls serveReads() with its operations. */
  script: string;
  workerData: unknown;
  timeoutMs: number;
  /** How long after timeoutMs a read's worker is terminated: 0, or the time its database takes to cancel it itself. */
  graceMs?: number;
  /** Reads run at once (one SQLite connection: 1; a PostgreSQL pool: its size); the others wait their turn. */
  concurrency: number;
  /** Old-generation heap of the worker, MiB. */
  heapMb: number;
}

/** Reads kept waiting beyond this many are refused at once: each is an open admin request. */
const QUEUE_MAX = 256;
const IDLE_STOP_MS = 60_000;
/** Terminated workers still finishing their SQLite call: while one is, a new worker is the last one. */
const MAX_FINISHING = 1;

interface Job {
  id: number;
  op: string;
  arg: unknown;
  /** The first chunk of a streamed read. */
  stream: boolean;
  /** A stream cancelled while its first chunk was being read: the worker's generator is returned once it answers. */
  cancelled?: boolean;
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  /** performance.now() when the read was asked. */
  askedAt: number;
}

/** A chunk of a streamed read, and whether more follow. */
interface StreamChunk {
  bytes: Buffer | null;
  more: boolean;
}

/** The chunks of a streamed read (ReaderThread.stream), asked one at a time. */
export interface ReadStream {
  /** The next chunk; null after the last. The first one fails like any read (time limit, store errors). */
  next(): Promise<Buffer | null>;
  /** Stops the read: the worker returns its generator and drops what it held. Nothing once the last chunk came. */
  cancel(): void;
}

interface OpenStream {
  worker: Worker;
  pending?: { resolve(chunk: StreamChunk): void; reject(err: Error): void };
}

const asBuffer = (v: unknown): unknown =>
  v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;

export class ReaderThread {
  private worker: Worker | undefined;
  private readonly queue: Job[] = [];
  private readonly running = new Map<number, Job>();
  /** Streams past their first chunk, by id: each held by the worker that read it. */
  private readonly streams = new Map<number, OpenStream>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private finishing = 0;

  constructor(private readonly options: ReaderThreadOptions) {}

  run<T>(op: string, arg?: unknown): Promise<T> {
    return this.enqueue(op, arg, false).answer as Promise<T>;
  }

  /** A read whose operation yields chunks (see the top of this module). */
  stream(op: string, arg?: unknown): ReadStream {
    let id: number | undefined;
    let ended = false;
    const take = ({ bytes, more }: StreamChunk) => {
      ended ||= !more;
      return bytes;
    };
    return {
      next: async () => {
        if (ended) return null;
        if (id !== undefined) return take(await this.pull(id));
        const job = this.enqueue(op, arg, true);
        id = job.id;
        return take((await job.answer) as StreamChunk);
      },
      cancel: () => {
        if (ended) return;
        ended = true;
        if (id !== undefined) this.cancelStream(id);
      },
    };
  }

  private enqueue(op: string, arg: unknown, stream: boolean): { id: number; answer: Promise<unknown> } {
    const id = this.nextId++;
    if (this.closed) return { id, answer: Promise.reject(new Error('the reader thread is closed')) };
    if (this.queue.length >= QUEUE_MAX) {
      const err = new QueryTimeoutError(this.options.timeoutMs, `${QUEUE_MAX} queries are waiting already`);
      return { id, answer: Promise.reject(err) };
    }
    const answer = new Promise<unknown>((resolve, reject) => {
      const job: Job = { id, op, arg, stream, resolve, reject, timer: undefined as never, askedAt: performance.now() };
      this.arm(job, this.options.timeoutMs + (this.options.graceMs ?? 0));
      this.queue.push(job);
      this.dispatch();
    });
    return { id, answer };
  }

  private pull(id: number): Promise<StreamChunk> {
    const open = this.streams.get(id);
    if (!open) return Promise.reject(new Error('the streamed read was stopped'));
    return new Promise<StreamChunk>((resolve, reject) => {
      open.pending = { resolve, reject };
      const request: Request = { id, pull: true };
      open.worker.postMessage(request);
    });
  }

  private cancelStream(id: number): void {
    const queued = this.queue.findIndex((job) => job.id === id);
    if (queued >= 0) return this.settle(this.queue.splice(queued, 1)[0], new Error('the streamed read was cancelled'));
    const running = this.running.get(id);
    if (running) running.cancelled = true;
    const open = this.streams.get(id);
    if (!open) return;
    this.streams.delete(id);
    const request: Request = { id, cancel: true };
    open.worker.postMessage(request);
    open.pending?.reject(new Error('the streamed read was cancelled'));
    this.dispatch();
  }

  /** The streams a stopped worker held fail: their next chunk will never come. */
  private failStreams(worker: Worker, err: Error): void {
    for (const [id, open] of this.streams) {
      if (open.worker !== worker) continue;
      this.streams.delete(id);
      open.pending?.reject(err);
    }
  }

  /** Stops the worker; reads still waiting or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const err = new Error('the reader thread is closed');
    for (const job of [...this.queue.splice(0), ...this.running.values()]) this.settle(job, err);
    this.running.clear();
    for (const open of this.streams.values()) open.pending?.reject(err);
    this.streams.clear();
    await this.stopWorker();
  }

  private dispatch(): void {
    clearTimeout(this.idleTimer);
    if (!this.worker && this.finishing > MAX_FINISHING) return; // started again once the terminated one is gone
    while (this.queue.length > 0 && this.running.size < this.options.concurrency) {
      const job = this.queue.shift()!;
      this.running.set(job.id, job);
      const request: Request = { id: job.id, op: job.op, arg: job.arg, stream: job.stream };
      (this.worker ?? this.start()).postMessage(request);
    }
    if (this.running.size === 0 && this.streams.size === 0 && this.worker)
      this.idleTimer = setTimeout(() => void this.stopWorker(), IDLE_STOP_MS).unref();
  }

  /**
   * Fails the read `ms` after it was asked. A timer counts from the event loop's cached time, which lags the clock by
   * whatever ran since the loop last read it: a timer firing early is armed again for the time still left.
   */
  private arm(job: Job, ms: number): void {
    job.timer = setTimeout(
      () => {
        const left = job.askedAt + ms - performance.now();
        if (left > 0) this.arm(job, ms);
        else this.timedOut(job);
      },
      Math.max(1, Math.ceil(job.askedAt + ms - performance.now())),
    );
  }

  private timedOut(job: Job): void {
    const queued = this.queue.indexOf(job);
    if (queued >= 0) this.queue.splice(queued, 1);
    else if (this.running.delete(job.id)) this.restart();
    job.reject(new QueryTimeoutError(this.options.timeoutMs));
  }

  /** A new worker for the reads that were running beside a cancelled one: they run again, first. */
  private restart(): void {
    this.queue.unshift(...this.running.values());
    this.running.clear();
    void this.stopWorker();
    this.dispatch();
  }

  private start(): Worker {
    const worker = new Worker(this.options.script, {
      workerData: this.options.workerData,
      resourceLimits: { maxOldGenerationSizeMb: this.options.heapMb },
    });
    worker.unref();
    worker.on('message', (msg: Response) => this.answer(msg, worker));
    let failure: Error | undefined;
    worker.on('error', (err: Error & { code?: string }) => {
      failure = err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new QueryTooLargeError(this.options.heapMb) : err;
    });
    worker.once('exit', (code) => {
      if (this.worker !== worker) return; // terminated on purpose: its reads were settled or moved
      this.worker = undefined;
      const err = failure ?? new Error(`the reader thread exited (code ${code})`);
      this.failStreams(worker, err);
      for (const job of this.running.values()) this.settle(job, err);
      this.running.clear();
      this.dispatch();
    });
    this.worker = worker;
    return worker;
  }

  private async stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    clearTimeout(this.idleTimer);
    if (!worker) return;
    this.failStreams(worker, new Error('the reader thread was stopped mid-stream'));
    this.finishing++;
    try {
      await worker.terminate();
    } finally {
      this.finishing--;
      if (!this.closed) this.dispatch();
    }
  }

  private answer(msg: Response, worker: Worker): void {
    const job = this.running.get(msg.id);
    if (!job) return this.answerStream(msg);
    this.running.delete(msg.id);
    if ('error' in msg) this.settle(job, this.failure(msg.error));
    else if (!job.stream) {
      clearTimeout(job.timer);
      job.resolve(asBuffer(msg.result));
    } else if (job.cancelled) {
      if (msg.more) worker.postMessage({ id: msg.id, cancel: true } satisfies Request);
      this.settle(job, new Error('the streamed read was cancelled'));
    } else {
      clearTimeout(job.timer);
      if (msg.more) this.streams.set(msg.id, { worker });
      job.resolve({ bytes: asBuffer(msg.result), more: msg.more === true });
    }
    this.dispatch();
  }

  /** The answer to a pull: the stream's next chunk, or its failure. */
  private answerStream(msg: Response): void {
    const open = this.streams.get(msg.id);
    const pending = open?.pending;
    if (!open || !pending) return;
    open.pending = undefined;
    if ('error' in msg || !msg.more) this.streams.delete(msg.id);
    if ('error' in msg) pending.reject(this.failure(msg.error));
    else pending.resolve({ bytes: asBuffer(msg.result) as Buffer | null, more: msg.more === true });
    if (!this.streams.has(msg.id)) this.dispatch();
  }

  private failure({ message, name, code }: { message: string; name: string; code?: string }): Error {
    return code === CANCELLED_CODE
      ? new QueryTimeoutError(this.options.timeoutMs)
      : Object.assign(new Error(message), { name, code });
  }

  private settle(job: Job, err: Error): void {
    clearTimeout(job.timer);
    job.reject(err);
  }
}

/** What a read raises inside the worker when its database cancelled it (PostgreSQL's statement_timeout). */
export const CANCELLED_CODE = 'query_cancelled';
