import { expect } from 'chai';
import { BufferedBodyCap } from '../../runtime/buffered-body-cap';

/** The bound on buffered request bodies and each workspace's and key's share of it (runtime/buffered-body-cap.ts). */
describe('BufferedBodyCap: the bound and its shares', () => {
  const a1 = { workspace: 'a', key: 'k1' };
  const a2 = { workspace: 'a', key: 'k2' };
  const b1 = { workspace: 'b', key: 'k1' };
  const anonymous = { workspace: undefined, key: undefined };

  it('refuses what would pass a key share, a workspace share or the bound, naming it, and reserves nothing then', () => {
    const cap = new BufferedBodyCap({ maxBytes: 100, workspaceBytes: 60, keyBytes: 40 });
    expect(cap.reserve(40, a1)).to.equal(undefined);
    expect(cap.reserve(1, a1)).to.equal('key_buffered_bytes');
    expect(cap.reserve(20, a2)).to.equal(undefined);
    expect(cap.reserve(1, a2)).to.equal('workspace_buffered_bytes');
    expect(cap.reserve(40, b1), 'the same key id in another workspace is another key').to.equal(undefined);
    expect(cap.reserve(1, anonymous), 'no workspace: the bound only').to.equal('max_buffered_bytes');
    expect([cap.held, cap.heldBy('a'), cap.heldBy('b')]).to.deep.equal([100, 60, 40]);
  });

  it('gives everything back on release, to the same owners', () => {
    const cap = new BufferedBodyCap({ maxBytes: 100, workspaceBytes: 60, keyBytes: 40 });
    cap.reserve(40, a1);
    cap.reserve(30, anonymous);
    cap.release(40, a1);
    cap.release(30, anonymous);
    expect([cap.held, cap.heldBy('a')]).to.deep.equal([0, 0]);
    expect(cap.reserve(40, a1)).to.equal(undefined);
  });

  it('without a key share, a key may take its whole workspace share', () => {
    const cap = new BufferedBodyCap({ maxBytes: 100, workspaceBytes: 60 });
    expect(cap.reserve(60, a1)).to.equal(undefined);
    expect(cap.reserve(1, a2)).to.equal('workspace_buffered_bytes');
  });
});
