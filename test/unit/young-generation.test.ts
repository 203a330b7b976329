import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { YOUNG_GENERATION_CAP_BYTES } from '../../runtime/young-generation';

/**
 * A child process keeps a ring of 200,000 objects live while it allocates, in short tasks as a loaded gateway runs
 * (one request's work each), so that much survives every young collection and V8 grows the semi-spaces. It prints
 * the young generation's size at the end (Node 24 reports a little more for a moment while it grows, so the end, not
 * the largest seen). Run with the cap (capYoungGeneration from the built module, `cap` argument),
 * without it, and with the cap asked for while Node was given its own semi-space size.
 */
const CHURN = `
const { getHeapSpaceStatistics } = require('node:v8');
const capped = process.argv[2] === 'cap' ? require(process.argv[1]).capYoungGeneration() : undefined;
const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const ring = new Array(200000);
let i = 0;
function task() {
  for (let j = 0; j < 20000; j++, i++) ring[i % ring.length] = { a: i, b: 'x' + i };
  if (i < 8000000) setImmediate(task);
  else console.log(JSON.stringify({ capped, young: young() }));
}
task();
`;

function churn(mode: 'cap' | 'none', nodeFlags: string[] = []): { capped?: boolean; young: number } {
  const out = execFileSync(
    process.execPath,
    [...nodeFlags, '-e', CHURN, require.resolve('../../runtime/young-generation'), mode],
    { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
  );
  return JSON.parse(out) as { capped?: boolean; young: number };
}

describe('capYoungGeneration (V8 semi-space growth factor)', function () {
  this.timeout(60_000);

  it('keeps the young generation within the cap while much survives', () => {
    const run = churn('cap');
    expect(run.capped).to.equal(true);
    expect(run.young).to.be.at.most(YOUNG_GENERATION_CAP_BYTES);
  });

  // Node 20's V8 stops at the cap by itself; Node 24's grows the semi-spaces to 64 MiB each.
  it('without the cap, the same load grows it to the cap at least (past it where V8 allows more)', () => {
    expect(churn('none').young).to.be.at.least(YOUNG_GENERATION_CAP_BYTES);
  });

  it('stays off when Node was given a semi-space size: the operator chose it', () => {
    const run = churn('cap', ['--max-semi-space-size=64']);
    expect(run.capped).to.equal(false);
    expect(run.young).to.be.greaterThan(YOUNG_GENERATION_CAP_BYTES);
  });
});
