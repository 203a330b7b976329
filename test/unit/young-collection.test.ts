import { execFileSync } from 'node:child_process';
import { expect } from 'chai';

/**
 * A child process relays 1 MiB at a time through bodyBytesRelayed, with markers on stdout between the steps;
 * V8's --trace-gc prints each collection, and one asked for by gc() with the reason "testing".
 */
const RELAY = `
const { writeSync } = require('node:fs');
const young = require(process.argv[1]);
const relay = (mib) => { for (let i = 0; i < mib; i++) young.bodyBytesRelayed(1024 * 1024); writeSync(1, '@' + young.relayedBodyBytes() + '\\n'); };
relay(3);
relay(1);
relay(3);
relay(5);
`;

/** The collections asked for in each step, each step's text ending with its marker (bytes counted so far). */
function steps(nodeFlags: string[]): Record<string, string[]> {
  const out = execFileSync(
    process.execPath,
    [...nodeFlags, '--trace-gc', '-e', RELAY, require.resolve('../../runtime/memory-policy')],
    { encoding: 'utf8' },
  );
  const parts = out.split(/^@(\d+)$/m);
  const result: Record<string, string[]> = {};
  for (let i = 1; i < parts.length; i += 2) {
    result[String(Number(parts[i]) / (1024 * 1024))] = parts[i - 1]
      .split('\n')
      .filter((l) => l.includes('testing'))
      .map((l) => l.replace(/^.*?ms: (\w+).*$/, '$1'));
  }
  return result;
}

describe('young collections after relayed bodies (runtime/memory-policy.ts)', function () {
  this.timeout(30_000);

  const EVERY_4_MIB = { '3': [], '4': ['Scavenge'], '7': [], '12': ['Scavenge', 'Scavenge'] };

  it('runs a young collection (a scavenge) after every 4 MiB relayed, and only then, with no Node flag', () => {
    expect(steps([])).to.deep.equal(EVERY_4_MIB);
  });

  it('does the same when Node was started with --expose-gc', () => {
    expect(steps(['--expose-gc'])).to.deep.equal(EVERY_4_MIB);
  });

  it('gives no gc() to the program itself', () => {
    const probe = `require(process.argv[1]).bodyBytesRelayed(8 * 1024 * 1024); process.stdout.write(typeof gc + ' ' + require('node:vm').runInNewContext('typeof gc'));`;
    const out = execFileSync(process.execPath, ['-e', probe, require.resolve('../../runtime/memory-policy')], {
      encoding: 'utf8',
    });
    expect(out).to.equal('undefined undefined');
  });
});
