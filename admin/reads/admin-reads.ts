/**
 * Every store read of the admin API and dashboard, off the proxy's event loop and within a time limit
 * (admin.query_timeout_ms): on the reader thread (storage/reader-thread.ts) with its own connection, SQLite's
 * read-only one or PostgreSQL's own pool of READ_POOL_SIZE. An in-memory SQLite store cannot be opened twice: its
 * reads run inline, on the store's own connection.
 *
 * A read past its time limit answers 503 query_timeout, one that needs more memory than the reader thread may use
 * 503 query_too_large; the gateway keeps serving either way.
 */
import { join } from 'node:path';
import type { TagSpendQuery } from '../../contracts/services';
import { GatewayError } from '../../core/errors';
import type { KeyPage, KeyPageQuery } from '../../storage/query/key-page';
import { READ_POOL_SIZE, type ReadSource } from '../../storage/read-connection';
import { QueryTimeoutError, QueryTooLargeError, ReaderThread, type ReadStream } from '../../storage/reader-thread';
import type { ListRequestsQuery, UsageFilter, UsageGroupRow, UsageQuery } from '../../storage/store';
import type { FocusContext } from '../dashboard/focus';
import type { SeriesParams } from '../dashboard/series';
import type { LatencyParams } from '../dashboard/latency';
import { readOps, type ReadOps, type UsageParams } from './read-ops';
import type { ReaderWorkerData } from './reader-worker';
import type { ReconciliationPageQuery } from './reconciliation-page';
import type { GenerationPage } from '../../reconcile/recorded-generation';

export interface AdminReadsOptions {
  /** admin.query_timeout_ms. */
  timeoutMs: number;
  /** Old-generation heap of the reader thread, MiB (READER_HEAP_MB by default). */
  heapMb?: number;
  /** admin.exports_max: exports of every group at once (EXPORTS_MAX by default). */
  exportsMax?: number;
}

/** admin.exports_max's default. */
export const EXPORTS_MAX = 2;
/** Seconds an export refused for the bound is asked to wait: about what an export of a few hundred thousand groups takes. */
const EXPORT_RETRY_AFTER_S = 10;

/**
 * What the reader thread's heap may hold: the rows of a grouping before its page is cut and the answer being built. A
 * read needing more stops with 503 query_too_large instead of growing the process; with a cancelled read's thread still
 * finishing beside a new one (storage/reader-thread.ts), the reads hold at most twice this.
 */
export const READER_HEAP_MB = 384;
/** Time PostgreSQL gets to answer a statement it cancelled at the limit, before the reader thread is terminated. */
const POSTGRES_CANCEL_GRACE_MS = 1000;

/** The reads answered whole; usageCsv is streamed. */
type Op = Exclude<keyof ReadOps, 'usageCsv'>;
type Arg<K extends Op> = Parameters<ReadOps[K]>[0];
type Result<K extends Op> = Awaited<ReturnType<ReadOps[K]>>;

/** A failure of the reader thread as the admin API answers it. */
function readFailure(err: unknown): unknown {
  const narrow = 'narrow the range or the filters';
  if (err instanceof QueryTimeoutError)
    return new GatewayError('query_timeout', `${err.message} (admin.query_timeout_ms): ${narrow}`, { cause: err });
  if (err instanceof QueryTooLargeError)
    return new GatewayError('query_too_large', `${err.message}: ${narrow}`, { cause: err });
  return err;
}

/** A streamed read run inline: the operation's generator, a chunk per next(). */
function inlineStream(chunks: AsyncIterator<Buffer>): ReadStream {
  let ended = false;
  return {
    async next() {
      if (ended) return null;
      const { value, done } = await chunks.next();
      ended = done === true;
      return ended ? null : value;
    },
    cancel() {
      if (ended) return;
      ended = true;
      void chunks.return?.();
    },
  };
}

export class AdminReads {
  private constructor(
    private readonly call: <K extends Op>(op: K, arg: Arg<K>) => Promise<Result<K>>,
    private readonly streamed: (op: 'usageCsv', arg: UsageParams) => ReadStream,
    private readonly stop: () => Promise<void>,
    private readonly exportsMax: number,
  ) {}

  /** Exports of every group running (or waiting for their first chunk). */
  private exports = 0;

  static open(source: ReadSource, opts: AdminReadsOptions): AdminReads {
    if (source.kind === 'inline') {
      const ops = readOps(source);
      const byName = ops as unknown as Record<Op, (arg: unknown) => Promise<unknown>>;
      return new AdminReads(
        <K extends Op>(op: K, arg: Arg<K>) => byName[op](arg) as Promise<Result<K>>,
        (op, arg) => inlineStream(ops[op](arg)),
        async () => undefined,
        opts.exportsMax ?? EXPORTS_MAX,
      );
    }
    const heapMb = opts.heapMb ?? READER_HEAP_MB;
    const exportsMax = opts.exportsMax ?? EXPORTS_MAX;
    const workerData: ReaderWorkerData = { source, timeoutMs: opts.timeoutMs, exportsMax };
    const thread = new ReaderThread({
      script: join(__dirname, 'reader-worker.js'),
      workerData,
      timeoutMs: opts.timeoutMs,
      concurrency: source.kind === 'postgres' ? READ_POOL_SIZE : 1,
      // PostgreSQL cancels a statement itself at the limit (statement_timeout): its answer comes first.
      graceMs: source.kind === 'postgres' ? POSTGRES_CANCEL_GRACE_MS : 0,
      heapMb,
    });
    const call = async <K extends Op>(op: K, arg: Arg<K>): Promise<Result<K>> => {
      try {
        return await thread.run<Result<K>>(op, arg);
      } catch (err) {
        throw readFailure(err);
      }
    };
    const streamed = (op: string, arg: unknown): ReadStream => {
      const chunks = thread.stream(op, arg);
      return {
        next: () => chunks.next().catch((err: unknown) => Promise.reject(readFailure(err))),
        cancel: () => chunks.cancel(),
      };
    };
    return new AdminReads(call, streamed, () => thread.close(), exportsMax);
  }

  /** The JSON body of GET /api/usage. */
  usage(p: UsageParams): Promise<Buffer> {
    return this.call('usage', p);
  }

  /**
   * The CSV body of GET /api/usage.csv, a chunk of lines at a time (CSV_CHUNK_LINES). At most `exportsMax` exports of
   * every group (limit=all) run at once, each from its first chunk until its last, failed or cancelled: each holds a
   * PostgreSQL connection of its own, or a temporary table on SQLite's one connection, while its client downloads.
   * Past the bound: 429 concurrency_limited with Retry-After.
   */
  usageCsv(p: UsageParams): ReadStream {
    if (p.limit !== Infinity) return this.streamed('usageCsv', p);
    if (this.exports >= this.exportsMax)
      throw new GatewayError(
        'concurrency_limited',
        `${this.exportsMax} exports of every group are running already (admin.exports_max); try again shortly`,
        { headers: { 'retry-after': String(EXPORT_RETRY_AFTER_S) } },
      );
    this.exports++;
    const chunks = this.streamed('usageCsv', p);
    let done = false;
    const finish = () => {
      if (!done) this.exports--;
      done = true;
    };
    return {
      next: async () => {
        try {
          const chunk = await chunks.next();
          if (chunk === null) finish();
          return chunk;
        } catch (err) {
          finish();
          throw err;
        }
      },
      cancel: () => {
        finish();
        chunks.cancel();
      },
    };
  }

  /** One chunk of GET /api/usage.focus.csv: the lines of the charge rows of filter's range. */
  focusCsv(arg: { filter: UsageFilter; focus: FocusContext }): Promise<Buffer> {
    return this.call('focusCsv', arg);
  }

  /** The JSON body of GET /api/usage/series. */
  series(p: SeriesParams): Promise<Buffer> {
    return this.call('series', p);
  }

  /** The JSON body of GET /api/latency. */
  latency(p: LatencyParams): Promise<Buffer> {
    return this.call('latency', p);
  }

  /** The JSON body of GET /api/requests. */
  requests(q: ListRequestsQuery): Promise<Buffer> {
    return this.call('requests', q);
  }

  /** The JSON body of GET /api/reconciliation. */
  reconciliation(q: ReconciliationPageQuery): Promise<Buffer> {
    return this.call('reconciliation', q);
  }

  /** A page of records as an OpenRouter reconciliation reads them (the scheduled run's, off the proxy's thread). */
  generationPage(q: ListRequestsQuery): Promise<GenerationPage> {
    return this.call('generationPage', q);
  }

  /** Each provider's newest successful reconciliation: its drift and when it finished. */
  reconciliationDrifts(): Promise<{ provider: string; drift: string | null; finishedAt: number }[]> {
    return this.call('reconciliationDrifts', undefined);
  }

  info(): Promise<{ latestTs: number | null; quarantined: number; keptFrom: number | null }> {
    return this.call('info', undefined);
  }

  tagKeys(): Promise<string[]> {
    return this.call('tagKeys', undefined);
  }

  keys(q: KeyPageQuery): Promise<KeyPage> {
    return this.call('keys', q);
  }

  /** Grouped totals (UsageStore.queryUsage): what the budgets' spend is read with for GET /api/budgets. */
  queryUsage(q: UsageQuery): Promise<UsageGroupRow[]> {
    return this.call('usageRows', q);
  }

  /** A page of a tag's spend (services/tag-spend-page.ts): the per-tag budgets of GET /api/budgets. */
  tagSpend(q: TagSpendQuery): Promise<[string, bigint][]> {
    return this.call('tagSpend', q);
  }

  close(): Promise<void> {
    return this.stop();
  }
}
