/**
 * storage/reader-thread.ts, with a real worker thread and a real SQLite statement (test/helpers/spin-reader-worker.ts):
 * the time limit, what happens to a cancelled SQLite call (it runs on until it returns), the bound on threads, and a
 * read that runs out of heap.
 */
import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { join } from 'node:path';
import { QueryTimeoutError, QueryTooLargeError, ReaderThread } from '../../storage/reader-thread';

const SCRIPT = join(__dirname, '../helpers/spin-reader-worker.js');
const open = (timeoutMs: number, heapMb = 64) =>
  new ReaderThread({ script: SCRIPT, workerData: undefined, timeoutMs, concurrency: 1, heapMb });

async function timed<T>(p: Promise<T>): Promise<{ ms: number; value?: T; error?: Error }> {
  const started = performance.now();
  try {
    const value = await p;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error: error as Error };
  }
}

describe('reader thread', function () {
  this.timeout(120_000);
  /** A count that takes the SQLite statement at least `ms` on this machine, and how long it took. */
  let slow: { n: number; ms: number };

  before(async () => {
    const thread = open(600_000);
    try {
      await thread.run('echo', 'warm');
      for (let n = 1_000_000; ; n *= 2) {
        const run = await timed(thread.run<number>('count', n));
        expect(run.value).to.equal(n);
        if (run.ms >= 3000 || n >= 512_000_000) {
          slow = { n, ms: run.ms };
          break;
        }
      }
    } finally {
      await thread.close();
    }
  });

  it('answers reads in turn; bytes come back as a Buffer', async () => {
    const thread = open(10_000);
    try {
      const [a, b, c] = await Promise.all([
        thread.run('echo', { x: 1n }),
        thread.run('bytes', 'héllo'),
        thread.run('count', 10),
      ]);
      expect(a).to.deep.equal({ x: 1n });
      expect(Buffer.isBuffer(b)).to.equal(true);
      expect((b as Buffer).toString('utf8')).to.equal('héllo');
      expect(c).to.equal(10);
    } finally {
      await thread.close();
    }
  });

  it('a read past its limit fails at the limit; the read behind it is answered by a new thread while the cancelled call runs on', async () => {
    const limit = Math.round(slow.ms / 3);
    const thread = open(limit);
    try {
      const started = performance.now();
      const cancelled = timed(thread.run('count', slow.n));
      // Asked later, its own limit ends later: it waits behind the long read, then has the rest of its time.
      await sleep(limit * 0.8);
      const behind = timed(thread.run('echo', 'next'));
      const first = await cancelled;
      expect(first.error).to.be.instanceOf(QueryTimeoutError);
      expect(first.ms).to.be.within(limit - 5, limit + 1000);
      const second = await behind;
      expect(second.value, String(second.error)).to.equal('next');
      expect(performance.now() - started, 'before the cancelled SQLite call could have returned').to.be.below(
        slow.ms * 0.8,
      );
    } finally {
      await thread.close();
    }
  });

  it('at most two threads: while two cancelled calls run on, a read waits for one of them to return', async () => {
    const limit = Math.round(slow.ms / 4);
    const thread = open(limit);
    try {
      const started = performance.now();
      expect((await timed(thread.run('count', slow.n))).error).to.be.instanceOf(QueryTimeoutError);
      expect((await timed(thread.run('count', slow.n))).error).to.be.instanceOf(QueryTimeoutError);
      // Both threads are still in their SQLite call: a third is not started, the read waits and reaches its limit.
      const waited = await timed(thread.run('echo', 'third'));
      expect(waited.error, 'no third thread').to.be.instanceOf(QueryTimeoutError);
      expect(performance.now() - started).to.be.below(slow.ms);
      // Once a cancelled call returned, reads are answered again (the two share the cores: allow them the time).
      let later = await timed(thread.run('echo', 'again'));
      while (later.error instanceof QueryTimeoutError && performance.now() - started < slow.ms * 6)
        later = await timed(thread.run('echo', 'again'));
      expect(later.value, String(later.error)).to.equal('again');
    } finally {
      await thread.close();
    }
  });

  it('a read that needs more heap than the thread may use fails alone; the next read is answered', async () => {
    const thread = open(60_000, 32);
    try {
      const hog = await timed(thread.run('hog'));
      expect(hog.error).to.be.instanceOf(QueryTooLargeError);
      expect(hog.error!.message).to.include('32 MiB');
      expect(await thread.run('echo', 'after')).to.equal('after');
    } finally {
      await thread.close();
    }
  });
});
