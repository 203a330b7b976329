import { expect } from 'chai';
import { newRequestId } from '../../core/request-id';

describe('request ids', () => {
  it('are UUIDv7: version 7, RFC variant, the current time in the first 48 bits', () => {
    const before = Date.now();
    const id = newRequestId();
    const after = Date.now();
    expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).to.be.within(before, after);
  });

  it('sort by time across milliseconds, and never repeat', async () => {
    const ids = new Set<string>();
    const first = newRequestId();
    for (let i = 0; i < 10_000; i++) ids.add(newRequestId());
    await new Promise((r) => setTimeout(r, 2));
    const later = newRequestId();
    expect(ids.size).to.equal(10_000);
    expect(first < later).to.equal(true);
  });
});
