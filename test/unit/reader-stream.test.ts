/**
 * Streamed reads of storage/reader-thread.ts (the CSV export of every group), with a real worker thread
 * (test/helpers/spin-reader-worker.ts): the worker makes at most one chunk ahead of those asked for, other reads run between
 * two chunks, cancelling returns the worker's generator, and a failure after the first chunk reaches the consumer.
 */
import { expect } from 'chai';
import { join } from 'node:path';
import { ReaderThread, type ReadStream } from '../../storage/reader-thread';
import { sleep } from '../helpers/wait';

const SCRIPT = join(__dirname, '../helpers/spin-reader-worker.js');
const open = () =>
  new ReaderThread({ script: SCRIPT, workerData: undefined, timeoutMs: 30_000, concurrency: 1, heapMb: 64 });

type Progress = { produced: number; returned: boolean };

async function text(s: ReadStream): Promise<string | null> {
  return (await s.next())?.toString() ?? null;
}

describe('reader thread: streamed reads', function () {
  this.timeout(60_000);
  let thread: ReaderThread;
  beforeEach(() => (thread = open()));
  afterEach(() => thread.close());

  it('makes at most one chunk ahead of those asked for, and answers other reads between two chunks', async () => {
    const s = thread.stream('chunks', { n: 5 });
    expect(await text(s)).to.equal('chunk 0');
    // One read at a time (concurrency 1): the open stream does not hold the turn.
    await sleep(100);
    expect(await thread.run<Progress>('progress')).to.deep.equal({ produced: 2, returned: false });
    expect(await text(s)).to.equal('chunk 1');
    await sleep(100);
    expect(await thread.run<Progress>('progress')).to.deep.equal({ produced: 3, returned: false });
    expect([await text(s), await text(s), await text(s), await text(s), await text(s)]).to.deep.equal([
      'chunk 2',
      'chunk 3',
      'chunk 4',
      null,
      null,
    ]);
    expect(await thread.run<Progress>('progress')).to.deep.equal({ produced: 5, returned: true });
  });

  it('cancelling stops the read on the worker: its generator returns and makes nothing more', async () => {
    const s = thread.stream('chunks', { n: 1000 });
    expect(await text(s)).to.equal('chunk 0');
    expect(await text(s)).to.equal('chunk 1');
    s.cancel();
    let progress = await thread.run<Progress>('progress');
    for (let i = 0; i < 50 && !progress.returned; i++) {
      await sleep(20);
      progress = await thread.run<Progress>('progress');
    }
    expect(progress).to.deep.equal({ produced: 3, returned: true });
    expect(await s.next()).to.equal(null);
  });

  it('a failure after the first chunk fails the next ask; a thread that stops fails the streams it held', async () => {
    const failing = thread.stream('chunks', { n: 5, failAt: 2 });
    expect(await text(failing)).to.equal('chunk 0');
    expect(await text(failing)).to.equal('chunk 1');
    const err = await failing.next().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('chunk 2 failed');

    const held = thread.stream('chunks', { n: 5 });
    expect(await text(held)).to.equal('chunk 0');
    await thread.close();
    const stopped = await held.next().then(
      () => null,
      (e: Error) => e,
    );
    expect(stopped?.message).to.equal('the streamed read was stopped');
  });
});
