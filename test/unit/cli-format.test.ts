import { expect } from 'chai';
import { count, usdCents } from '../../cli/format';
import { LineProgress } from '../../cli/progress';

const PICO_PER_CENT = 10_000_000_000n;

describe('CLI number formats', () => {
  it('counts with thousands separators whatever the locale', () => {
    expect([0, 999, 1000, 1234567, 10_000_000_000].map(count)).to.deep.equal([
      '0',
      '999',
      '1,000',
      '1,234,567',
      '10,000,000,000',
    ]);
  });

  it('money to the nearest cent, half away from zero, with separators', () => {
    expect(usdCents(0n)).to.equal('$0.00');
    expect(usdCents(1_060_114_667_000_000n)).to.equal('$1,060.11'); // $1060.114667
    expect(usdCents((5n * PICO_PER_CENT) / 10n)).to.equal('$0.01'); // half a cent rounds up
    expect(usdCents(1_234_567_891n * PICO_PER_CENT + PICO_PER_CENT / 2n)).to.equal('$12,345,678.92');
  });

  it('a cost that is not zero never shows as $0.00', () => {
    expect(usdCents(1n)).to.equal('<$0.01');
    expect(usdCents(PICO_PER_CENT / 2n - 1n)).to.equal('<$0.01');
  });

  it('a lower bound rounds down, so that it stays one', () => {
    expect(usdCents(199n * PICO_PER_CENT + PICO_PER_CENT - 1n, true)).to.equal('$1.99');
    expect(usdCents(1n, true)).to.equal('$0.00');
  });
});

describe('CLI progress without a terminal', () => {
  const collect = () => {
    const lines: string[] = [];
    return { lines, out: { write: (t: string) => lines.push(t), isTTY: false } };
  };

  it('one line at the start, one per interval while it runs, one at the end', () => {
    let now = 1_000_000;
    const { lines, out } = collect();
    const p = new LineProgress('usage reprice', 1_000_000, 'records', out, { intervalMs: 5000, now: () => now });
    expect(lines).to.deep.equal(['usage reprice: 1,000,000 records\n']);
    p.update(1000);
    now += 4999;
    p.update(2000);
    expect(lines, 'nothing before the interval').to.have.length(1);
    now += 1;
    p.update(120_000);
    now += 5000;
    p.update(250_500);
    now += 2000;
    p.update(1_000_000);
    p.stop();
    expect(lines.slice(1)).to.deep.equal([
      'usage reprice: 120,000 of 1,000,000 records (12%), 5 s\n',
      'usage reprice: 250,500 of 1,000,000 records (25%), 10 s\n',
      'usage reprice: 1,000,000 of 1,000,000 records (100%), 12 s\n',
    ]);
  });

  it('a run shorter than the interval prints its first line only', () => {
    const { lines, out } = collect();
    const p = new LineProgress('demo', 40, 'requests', out, { now: () => 0 });
    p.update(40);
    p.stop();
    expect(lines).to.deep.equal(['demo: 40 requests\n']);
  });

  it('keeps time while the demo moves Date.now along its simulated request times', async () => {
    const { lines, out } = collect();
    const realNow = Date.now;
    try {
      Date.now = () => 1_700_000_000_000; // stands still in the past, as a simulated clock may
      const p = new LineProgress('demo', 100, 'requests', out, { intervalMs: 20 });
      await new Promise((r) => setTimeout(r, 40));
      p.update(50);
      expect(lines[1]).to.match(/^demo: 50 of 100 requests \(50%\), 0 s\n$/);
    } finally {
      Date.now = realNow;
    }
  });

  it('more done than counted at the start (records written meanwhile) grows the total', () => {
    let now = 0;
    const { lines, out } = collect();
    const p = new LineProgress('usage reprice', 10, 'records', out, { intervalMs: 1000, now: () => now });
    now = 1000;
    p.update(12);
    expect(lines[1]).to.equal('usage reprice: 12 of 12 records (100%), 1 s\n');
  });
});
