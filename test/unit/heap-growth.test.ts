import { execFileSync } from 'node:child_process';
import { expect } from 'chai';

/**
 * A child process keeps some memory live and churns objects that are promoted, then die (what in-flight requests
 * and queued usage records do under load), so V8 runs full collections and sets the next limit after each. V8's
 * --trace-gc-verbose prints every limit it sets and its factor (factorsIn reads both forms): "[HeapController] Limit: old size: 22166 KB,
 * new limit: 31365 KB (1.4)". Run once as V8 sizes the heap by itself and once with limitHeapGrowth applied at
 * run time (as startGateway does) from the built module.
 */
const CHURN = `
const percent = Number(process.argv[2]);
if (percent > 0) require(process.argv[1]).limitHeapGrowth(percent);
const live = [];
for (let i = 0; i < 300; i++) live.push(Array.from({ length: 2000 }, (_, x) => ({ x })));
const ring = new Array(2000);
for (let i = 0; i < 1000000; i++) ring[i % ring.length] = { a: [i, i + 1, i + 2], s: 'x' + i };
`;

/** Some live memory, then the call, with markers around it on stdout (Node runs with no flag but the trace). */
const AT_START = `
const { writeSync } = require('node:fs');
const live = [];
for (let i = 0; i < 300; i++) live.push(Array.from({ length: 2000 }, (_, x) => ({ x })));
writeSync(1, 'BEFORE\\n');
require(process.argv[1]).limitHeapGrowth(35);
writeSync(1, 'AFTER\\n');
`;

/**
 * Bound at 35%, then two bulk bodies held, one released, the other released (twice), with churn after each step
 * so that full collections set limits; markers on stdout split the trace, and the count in flight follows each.
 */
const BULK = `
const { writeSync } = require('node:fs');
const growth = require(process.argv[1]);
growth.limitHeapGrowth(35);
const live = [];
for (let i = 0; i < 300; i++) live.push(Array.from({ length: 2000 }, (_, x) => ({ x })));
const churn = () => { const ring = new Array(20000); for (let i = 0; i < 2000000; i++) ring[i % ring.length] = { a: [i, i + 1, i + 2], s: 'x' + i }; };
const step = (name) => { churn(); writeSync(1, '@' + name + ' ' + growth.bulkBodiesInFlight() + '\\n'); };
step('BOUND');
const first = growth.holdForBulkBody();
const second = growth.holdForBulkBody();
step('TWO_HELD');
first();
step('ONE_HELD');
second();
second();
step('NONE_HELD');
`;

function traced(script: string, args: string[], nodeFlags: string[] = []): string {
  const argv = [
    ...nodeFlags,
    '--max-semi-space-size=1',
    '--trace-gc-verbose',
    '-e',
    script,
    require.resolve('../../runtime/memory-policy'),
    ...args,
  ];
  return execFileSync(process.execPath, argv, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/**
 * The factor of every limit V8 set. Up to Node 22 V8 prints it on the limit line ("new limit: 31365 KB (1.4)", the
 * line before it holds the factor it would have chosen); from Node 24 on, the limit line has none and the line
 * before it ("[HeapController] factor 1.4 based on ...") holds the one used.
 */
const factorsIn = (out: string): number[] => {
  const factors: number[] = [];
  let announced: number | undefined;
  for (const line of out.split('\n')) {
    const factor = /\[HeapController\] factor ([\d.]+) based on/.exec(line);
    if (factor) announced = Number(factor[1]);
    const limit = /\[HeapController\] Limit: old size: \d+ KB, new limit: \d+ KB(?: \(([\d.]+)\))?/.exec(line);
    if (limit) factors.push(limit[1] === undefined ? (announced ?? NaN) : Number(limit[1]));
  }
  return factors;
};

const growthFactors = (percent: number): number[] => factorsIn(traced(CHURN, [String(percent)]));

const NO_TRACE = 'no "[HeapController] Limit" line: no full collection ran, or V8 prints its trace differently';

describe('limitHeapGrowth (V8 heap growing factor)', function () {
  this.timeout(30_000);

  it('sets the limit of every full collection to what it left live plus the percentage', () => {
    const bounded = growthFactors(35);
    expect(bounded, NO_TRACE).to.not.be.empty;
    expect(new Set(bounded)).to.deep.equal(new Set([1.4])); // 1.35, printed with one decimal
  });

  it('sets the new limit at once, not only at the next collection under load, with no Node flag', () => {
    const [, during] = traced(AT_START, []).split(/^(?:BEFORE|AFTER)$/m);
    expect(factorsIn(during), 'the limit set by a collection during the call').to.deep.equal([1.4]);
  });

  it('leaves the factor to V8 at 0, which lets a small heap grow up to 4x', () => {
    const own = growthFactors(0);
    expect(own, NO_TRACE).to.not.be.empty;
    expect(Math.max(...own)).to.be.greaterThan(2);
  });

  it('is widened to 3x while bulk bodies are in flight, and restored when the last is released', () => {
    const out = traced(BULK, []);
    // Each part holds the limits set during one step, and ends with its marker and the count in flight.
    const parts = out.split(/^@(\w+ \d+)$/m);
    const steps = Object.fromEntries([1, 3, 5, 7].map((i) => [parts[i], new Set(factorsIn(parts[i - 1]))]));
    expect(Object.keys(steps)).to.deep.equal(['BOUND 0', 'TWO_HELD 2', 'ONE_HELD 1', 'NONE_HELD 0']);
    for (const factors of Object.values(steps)) expect(factors.size, NO_TRACE).to.be.greaterThan(0);
    expect(steps['BOUND 0']).to.deep.equal(new Set([1.4]));
    expect(steps['TWO_HELD 2']).to.deep.equal(new Set([3]));
    expect(steps['ONE_HELD 1']).to.deep.equal(new Set([3]));
    expect(steps['NONE_HELD 0']).to.deep.equal(new Set([1.4]));
  });
});
