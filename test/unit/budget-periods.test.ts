import { expect } from 'chai';
import { alertReached } from '../../plugins/budget/alert';
import { BudgetLedger, type BudgetStatus } from '../../services/budget-ledger';
import { periodAt } from '../../plugins/budget/periods';

const at = (iso: string) => Date.parse(iso);
const period = (startIso: string, endIso: string) => ({ startMs: at(startIso), endMs: at(endIso) });

describe('budget periods and alerts', () => {
  describe('periodAt', () => {
    // It remembers the last period of each kind: each test starts from one far from the instants it asks for.
    beforeEach(() => {
      periodAt('day', 0);
      periodAt('month', 0);
    });

    it('a day is the UTC calendar day holding the instant, start included, end excluded', () => {
      expect(periodAt('day', at('2026-03-14T15:09:26.535Z'))).to.deep.equal(
        period('2026-03-14T00:00:00Z', '2026-03-15T00:00:00Z'),
      );
      expect(periodAt('day', at('2026-03-15T00:00:00.000Z'))).to.deep.equal(
        period('2026-03-15T00:00:00Z', '2026-03-16T00:00:00Z'),
      );
      expect(periodAt('day', at('2026-03-15T23:59:59.999Z'))).to.deep.equal(
        period('2026-03-15T00:00:00Z', '2026-03-16T00:00:00Z'),
      );
      // UTC, whatever the local offset of the instant as written
      expect(periodAt('day', at('2026-03-16T01:30:00+05:00'))).to.deep.equal(
        period('2026-03-15T00:00:00Z', '2026-03-16T00:00:00Z'),
      );
    });

    it('a month runs from the 1st to the 1st of the next month, across the year end and in a leap February', () => {
      expect(periodAt('month', at('2026-03-31T23:59:59.999Z'))).to.deep.equal(
        period('2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z'),
      );
      expect(periodAt('month', at('2026-04-01T00:00:00.000Z'))).to.deep.equal(
        period('2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'),
      );
      expect(periodAt('month', at('2026-12-31T12:00:00Z'))).to.deep.equal(
        period('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'),
      );
      expect(periodAt('month', at('2028-02-29T08:00:00Z'))).to.deep.equal(
        period('2028-02-01T00:00:00Z', '2028-03-01T00:00:00Z'),
      );
    });

    it('gives the same period to every instant in it, and the next one from its first millisecond', () => {
      const first = periodAt('day', at('2026-05-10T00:00:00Z'));
      expect(periodAt('day', at('2026-05-10T13:00:00Z'))).to.deep.equal(first);
      expect(periodAt('day', at('2026-05-10T23:59:59.999Z'))).to.deep.equal(first);
      expect(periodAt('day', at('2026-05-11T00:00:00Z'))).to.deep.equal(
        period('2026-05-11T00:00:00Z', '2026-05-12T00:00:00Z'),
      );
      // back in an earlier period after a later one was asked for
      expect(periodAt('day', at('2026-05-09T23:59:59.999Z'))).to.deep.equal(
        period('2026-05-09T00:00:00Z', '2026-05-10T00:00:00Z'),
      );
    });

    it('keeps days and months apart', () => {
      const now = at('2026-07-20T10:00:00Z');
      expect(periodAt('day', now)).to.deep.equal(period('2026-07-20T00:00:00Z', '2026-07-21T00:00:00Z'));
      expect(periodAt('month', now)).to.deep.equal(period('2026-07-01T00:00:00Z', '2026-08-01T00:00:00Z'));
      expect(periodAt('day', now)).to.deep.equal(period('2026-07-20T00:00:00Z', '2026-07-21T00:00:00Z'));
    });

    it('hands out a period no caller can change', () => {
      const p = periodAt('month', at('2026-09-09T09:09:09Z'));
      expect(Object.isFrozen(p)).to.equal(true);
    });
  });

  describe('alertReached', () => {
    // $10 limit, alert at 80%: the alert is due at exactly $8 spent.
    const limit = 10_000_000_000_000n;

    it('is reached at exactly alert_at x limit, not one pico-USD before', () => {
      expect(alertReached(8_000_000_000_000n, limit, 0.8)).to.equal(true);
      expect(alertReached(7_999_999_999_999n, limit, 0.8)).to.equal(false);
      expect(alertReached(8_000_000_000_001n, limit, 0.8)).to.equal(true);
    });

    it('reads alert_at to a thousandth (0.805 = $8.05 of $10), and alert_at 1 at the full limit', () => {
      expect(alertReached(8_050_000_000_000n, limit, 0.805)).to.equal(true);
      expect(alertReached(8_049_999_999_999n, limit, 0.805)).to.equal(false);
      expect(alertReached(limit, limit, 1)).to.equal(true);
      expect(alertReached(limit - 1n, limit, 1)).to.equal(false);
    });

    it('nothing spent reaches no alert', () => {
      expect(alertReached(0n, limit, 0.001)).to.equal(false);
      expect(alertReached(10_000_000_000n, limit, 0.001)).to.equal(true); // $0.01 = 0.1% of $10
    });
  });

  describe('BudgetLedger', () => {
    const status = (key: string): BudgetStatus => ({
      key,
      id: 'yaml:default:0',
      source: 'yaml',
      workspace: 'default',
      scope: 'workspace',
      period: 'day',
      periodStart: 0,
      periodEnd: 86_400_000,
      limitPico: 1n,
      spentPico: 0n,
      reservedPico: 0n,
      alertAt: [0.8],
      alerted: false,
      action: 'block',
      filters: { workspace: 'default' },
    });

    it('lists nothing while no budget plugin is attached', async () => {
      expect(await new BudgetLedger().list()).to.deep.equal([]);
    });

    it("lists every page of the attached source's budgets, asking each page after the last one's cursor", async () => {
      const ledger = new BudgetLedger();
      const asked: [number, string | null][] = [];
      const pages = [
        { statuses: [status('ws:a:all:day:0')], next: { workspace: 'a', id: 'x', value: '1' } },
        { statuses: [status('ws:a:tag:x=2:day:0')], next: null },
      ];
      ledger.attach({
        page: async (now, _reads, after) => {
          asked.push([now, after?.value ?? null]);
          return pages[asked.length - 1];
        },
      });
      const listed = await ledger.list(1_234);
      expect(listed.map((s) => s.key)).to.deep.equal(['ws:a:all:day:0', 'ws:a:tag:x=2:day:0']);
      expect(asked).to.deep.equal([
        [1_234, null],
        [1_234, '1'],
      ]);
    });

    it('asks for the current time when no instant is given', async () => {
      const ledger = new BudgetLedger();
      let asked = 0;
      ledger.attach({ page: async (now) => ((asked = now), { statuses: [], next: null }) });
      const before = Date.now();
      await ledger.list();
      expect(asked).to.be.within(before, Date.now());
    });
  });
});
