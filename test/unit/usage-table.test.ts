import { expect } from 'chai';
import { reportTable, usageReport } from '../../cli/usage-report';
import { zeroTotals } from '../../storage/counters';
import type { UsageGroupRow } from '../../storage/store';

/** `n` groups of customer_id,model as the store answers them (unordered), each of its own cost. */
function groups(n: number): UsageGroupRow[] {
  return Array.from({ length: n }, (_, i) => ({
    ...zeroTotals(),
    requests: 1 + (i % 7),
    inputTokens: 1000 + i,
    outputTokens: 200 + i,
    costPico: BigInt(((i * 7919) % n) + 1) * 10_000_000n,
    group: { customer_id: `customer-${String(i).padStart(5, '0')}`, model: `model-${i % 16}` },
  }));
}

const RANGE = { from: 0, to: 86_400_000 };
const GROUP_BY = ['customer_id', 'model'];

/** The table of every group, as `tollgate usage --all` prints it. */
const table = (rows: UsageGroupRow[]) =>
  reportTable(usageReport(rows, GROUP_BY, { limit: Infinity, offset: 0 }, RANGE));

/** The fastest of `runs` renderings, in ms: the least disturbed by whatever else the machine runs. */
function fastest(rows: UsageGroupRow[], runs: number): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    table(rows);
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

describe('tollgate usage table (cli/usage-report.ts, cli/table.ts)', function () {
  this.timeout(60_000);

  it('renders in time linear in the groups: 4x the groups take well under 16x (quadratic) the time', () => {
    const small = groups(2000);
    const large = groups(8000);
    table(large); // compiled before anything is timed
    const ratio = fastest(large, 5) / fastest(small, 5);
    // Linear is 4x; a quadratic renderer (a width pass per row, a string rebuilt per line) is 16x. 8x leaves room
    // for a loaded machine without letting a quadratic step through.
    expect(ratio).to.be.below(8);
    const lines = table(large).split('\n\n')[0].split('\n');
    expect(lines).to.have.length(8000 + 2); // header, rule, every group
  });

  it('pages as GET /api/usage does: limit groups from offset, the rest in "other", the next offset named', () => {
    const rows = groups(250);
    const page = usageReport(rows, GROUP_BY, { limit: 100, offset: 100 }, RANGE);
    const all = usageReport(rows, GROUP_BY, { limit: Infinity, offset: 0 }, RANGE);
    expect(page.rows.map((r) => r.group)).to.deep.equal(all.rows.slice(100, 200).map((r) => r.group));
    expect(page.other?.groups).to.equal(150);
    expect(page.other!.requests + page.rows.reduce((n, r) => n + r.requests, 0)).to.equal(all.total.requests);
    expect(page.nextOffset).to.equal(200);
    expect(reportTable(page)).to.include(
      '150 more groups in the other row: --limit or --all shows them, --offset 200 the next page',
    );
    const last = usageReport(rows, GROUP_BY, { limit: 100, offset: 200 }, RANGE);
    expect(last.rows).to.have.length(50);
    expect(last.nextOffset).to.equal(null);
    expect(reportTable(last)).to.not.include('--offset');
  });

  it('shows a list cost column only when a negotiated discount took something off', () => {
    const plain = groups(3).map((r) => ({ ...r, listCostCount: r.requests }));
    expect(table(plain)).to.not.include('list cost');
    // 24% off the first group's list price: cost $1.52 of $2.00; the others at their list price.
    const discounted = plain.map((r, i) =>
      i === 0 ? { ...r, costPico: 1_520_000_000_000n, discountPico: 480_000_000_000n } : r,
    );
    const out = table(discounted);
    expect(out).to.match(
      /^customer_id\s+model\s+requests\s+input\s+output\s+cache read\s+cache write\s+cost\s+list cost\s/m,
    );
    expect(out).to.match(/^customer-00000\s+model-0\s+1\s+1,000\s+200\s+0\s+0\s+\$1\.52\s+\$2\.00\s/m);
    expect(out).to.include('at list price ($0.48 discount)');
  });
});
