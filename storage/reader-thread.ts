/**
 * Reads of the control plane (admin API, dashboard) on a worker thread of their own, each with a time limit.
 *
 * better-sqlite3 is synchronous: a dashboard grouping of a few seconds, run on the proxy's thread, held every proxied
 * request for as long. Here the worker owns its own read connection (storage/read-connection.ts) and runs named
 * operations (`serveReads`, given by the worker's script); the proxy's thread only posts a request and receives the
 * answer. An answer built as bytes (a JSON body) is transferred, not copied, so that a large one costs this thread
 * nothing to decode or serialise.
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
 */
import { parentPort, Worker } from 'node:worker_threads';

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
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  /** performance.now() when the read was asked. */
  askedAt: number;
}

type Request = { id: number; op: string; arg: unknown };
type Response =
  { id: number; result: unknown } | { id: number; error: { message: string; name: string; code?: string } };

export class ReaderThread {
  private worker: Worker | undefined;
  private readonly queue: Job[] = [];
  private readonly running = new Map<number, Job>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private finishing = 0;

  constructor(private readonly options: ReaderThreadOptions) {}

  run<T>(op: string, arg?: unknown): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the reader thread is closed'));
    if (this.queue.length >= QUEUE_MAX)
      return Promise.reject(new QueryTimeoutError(this.options.timeoutMs, `${QUEUE_MAX} queries are waiting already`));
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        op,
        arg,
        resolve: resolve as (v: unknown) => void,
        reject,
        timer: undefined as unknown as NodeJS.Timeout,
        askedAt: performance.now(),
      };
      this.arm(job, this.options.timeoutMs + (this.options.graceMs ?? 0));
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Stops the worker; reads still waiting or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const err = new Error('the reader thread is closed');
    for (const job of [...this.queue.splice(0), ...this.running.values()]) this.settle(job, err);
    this.running.clear();
    await this.stopWorker();
  }

  private dispatch(): void {
    clearTimeout(this.idleTimer);
    if (!this.worker && this.finishing > MAX_FINISHING) return; // started again once the terminated one is gone
    while (this.queue.length > 0 && this.running.size < this.options.concurrency) {
      const job = this.queue.shift()!;
      this.running.set(job.id, job);
      const request: Request = { id: job.id, op: job.op, arg: job.arg };
      (this.worker ?? this.start()).postMessage(request);
    }
    if (this.running.size === 0 && this.worker)
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
    worker.on('message', (msg: Response) => this.answer(msg));
    let failure: Error | undefined;
    worker.on('error', (err: Error & { code?: string }) => {
      failure = err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new QueryTooLargeError(this.options.heapMb) : err;
    });
    worker.once('exit', (code) => {
      if (this.worker !== worker) return; // terminated on purpose: its reads were settled or moved
      this.worker = undefined;
      const err = failure ?? new Error(`the reader thread exited (code ${code})`);
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
    this.finishing++;
    try {
      await worker.terminate();
    } finally {
      this.finishing--;
      if (!this.closed) this.dispatch();
    }
  }

  private answer(msg: Response): void {
    const job = this.running.get(msg.id);
    if (!job) return;
    this.running.delete(msg.id);
    if ('error' in msg) {
      const { message, name, code } = msg.error;
      this.settle(
        job,
        code === CANCELLED_CODE
          ? new QueryTimeoutError(this.options.timeoutMs)
          : Object.assign(new Error(message), { name, code }),
      );
    } else {
      clearTimeout(job.timer);
      job.resolve(
        msg.result instanceof Uint8Array
          ? Buffer.from(msg.result.buffer, msg.result.byteOffset, msg.result.byteLength)
          : msg.result,
      );
    }
    this.dispatch();
  }

  private settle(job: Job, err: Error): void {
    clearTimeout(job.timer);
    job.reject(err);
  }
}

/** What a read raises inside the worker when its database cancelled it (PostgreSQL's statement_timeout). */
export const CANCELLED_CODE = 'query_cancelled';

/**
 * The worker side: answers each request with ops[op](arg). Bytes (a Uint8Array over a whole buffer) are transferred.
 * A read the database cancelled for its time limit (an error with code CANCELLED_CODE) fails as a QueryTimeoutError.
 */
export function serveReads(ops: Record<string, (arg: never) => Promise<unknown>>): void {
  const port = parentPort;
  if (!port) throw new Error('serveReads runs on a worker thread');
  port.on('message', async ({ id, op, arg }: Request) => {
    let response: Response;
    let transfer: ArrayBuffer[] | undefined;
    try {
      const run = Object.hasOwn(ops, op) ? ops[op] : undefined;
      if (!run) throw new Error(`unknown read ${op}`);
      const result = await run(arg as never);
      if (result instanceof Uint8Array && result.byteOffset === 0 && result.byteLength === result.buffer.byteLength)
        transfer = [result.buffer as ArrayBuffer];
      response = { id, result };
    } catch (err) {
      const e = err as Error & { code?: unknown };
      response = {
        id,
        error: { message: e.message, name: e.name, code: typeof e.code === 'string' ? e.code : undefined },
      };
    }
    port.postMessage(response, transfer);
  });
}
