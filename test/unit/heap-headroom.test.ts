import { expect } from 'chai';
import { HeapHeadroom, oldGenerationBytes } from '../../core/heap-headroom';

const MB = 1024 * 1024;

describe('HeapHeadroom (asynchronous full GCs under load)', () => {
  function governor(headroomMb: number) {
    const calls: unknown[] = [];
    let reading = 0;
    const h = new HeapHeadroom(headroomMb, (options) => calls.push(options), () => reading);
    return { h, calls, set: (mb: number) => (reading = mb * MB) };
  }

  it('starts one asynchronous major collection once the old generation grew past the headroom', () => {
    const { h, calls, set } = governor(16);
    for (const mb of [30, 25, 34, 41]) {
      set(mb);
      h.check();
    }
    expect(calls, 'growth of 16 MiB from the lowest reading (25) is not over the headroom yet').to.deep.equal([]);
    set(42);
    h.check();
    expect(calls).to.deep.equal([{ type: 'major', execution: 'async' }]);
  });

  it('measures growth again from the first reading after its collection', () => {
    const { h, calls, set } = governor(16);
    for (const mb of [20, 40, 28, 40, 45]) {
      set(mb);
      h.check();
    }
    // 40 (over 20 + 16: collect), 28 (new baseline), 40 (+12), 45 (+17: collect again)
    expect(calls).to.have.length(2);
    expect(h.collections).to.equal(2);
  });

  it('does nothing when disabled (0) or without gc()', () => {
    expect(new HeapHeadroom(0, () => undefined).enabled).to.equal(false);
    expect(new HeapHeadroom(16, undefined).enabled).to.equal(false);
    expect(new HeapHeadroom(16, () => undefined).enabled).to.equal(true);
  });

  it('reads the real old generation', () => {
    const before = oldGenerationBytes();
    expect(before).to.be.greaterThan(MB);
  });
});
