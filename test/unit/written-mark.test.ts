import { expect } from 'chai';
import { WrittenMark } from '../../services/written-mark';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('WrittenMark: how far the usage records have reached the store', () => {
  it('tracks nothing until asked: the mark stays at its creation until the queues are found empty', async () => {
    let empty = false;
    const made = Date.now();
    const mark = new WrittenMark(() => empty);
    await pause(5);
    mark.enqueued({ id: 'a' }); // not tracked: nobody asked yet
    const first = mark.before();
    expect(first).to.be.at.least(made).and.below(Date.now());

    empty = true;
    await pause(1_050); // the queues are asked at most once a second
    expect(mark.before()).to.equal(Infinity);
  });

  it('once tracking, the mark is the oldest record not written, and Infinity when all are', async () => {
    const mark = new WrittenMark(() => true);
    expect(mark.before()).to.equal(Infinity); // starts tracking: the queues are empty
    const before = Date.now();
    mark.enqueued({ id: 'a' });
    // Node's timers run on the event loop's cached clock, so a 5 ms pause can end 4 ms later by Date.now().
    await pause(10);
    mark.enqueued({ id: 'b' });
    const oldest = mark.before();
    expect(oldest)
      .to.be.at.least(before)
      .and.below(Date.now() - 4);
    mark.written(['a']);
    expect(mark.before()).to.be.above(oldest);
    mark.written([{ id: 'b' }]);
    expect(mark.before()).to.equal(Infinity);
  });

  it('past the tracking bound the mark stays at the oldest record not written, never jumps to the overflow', async () => {
    let empty = true;
    const mark = new WrittenMark(() => empty);
    expect(mark.before()).to.equal(Infinity);
    empty = false;
    mark.enqueued({ id: 'first' });
    const firstAt = mark.before();
    await pause(10);
    for (let i = 0; i < 20_001; i++) mark.enqueued({ id: `r${i}` });
    mark.written(['first', 'r0']); // not tracked any more: the mark cannot move on these
    expect(mark.before()).to.equal(firstAt);
  });
});
