import { expect } from 'chai';
import type { BudgetCheck } from '../../contracts/limit-store';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';

/** The sweep that drops idle entries runs on a timer; called directly here with the instant it would see. */
const sweep = (store: MemoryLimitStore, now: number) => (store as unknown as { sweep(now: number): void }).sweep(now);

// 2 tokens a second: one token every 500 ms, 0.002 a millisecond.
const bucket = { key: 'rps:ws:default', limit: 2, windowMs: 1000 };
const check = (periodEndMs: number, limitPico = 100n): BudgetCheck => ({
  key: 'ws:default:all:day:0',
  limitPico,
  periodEndMs,
  seedPico: 7n,
});

describe('in-memory limit store', () => {
  let store: MemoryLimitStore;
  beforeEach(() => (store = new MemoryLimitStore()));
  afterEach(() => store.close());

  describe('token bucket refunds', () => {
    it('give a token back on top of what refilled meanwhile', async () => {
      await store.take([bucket], 0);
      await store.take([bucket], 0); // empty
      await store.refund([bucket], 250); // 0 + 250 x 0.002 + 1 = 1.5 tokens
      expect(await store.take([bucket], 250)).to.deep.equal({
        allowed: true,
        buckets: [{ key: bucket.key, limit: 2, remaining: 0, resetMs: 750, retryAfterMs: 0 }],
      });
      // 0.5 left: the next token in 250 ms, full in 750 ms
      expect(await store.take([bucket], 250)).to.deep.equal({
        allowed: false,
        buckets: [{ key: bucket.key, limit: 2, remaining: 0, resetMs: 750, retryAfterMs: 250 }],
      });
    });

    it('never above the limit, and a bucket never taken from stays full', async () => {
      await store.take([bucket], 0);
      await store.refund([bucket], 10_000);
      expect((await store.take([bucket], 10_000)).buckets[0].remaining).to.equal(1);
      const unknown = { key: 'rpm:other', limit: 5, windowMs: 60_000 };
      await store.refund([unknown], 0);
      expect((await store.take([unknown], 0)).buckets[0].remaining).to.equal(4);
    });
  });

  describe('budget reservations', () => {
    it('a refused reservation holds nothing', async () => {
      expect((await store.reserve([check(10_000_000_000_000)], 'a', 60n, 60_000)).allowed).to.equal(true);
      const refused = await store.reserve([check(10_000_000_000_000)], 'b', 60n, 60_000);
      expect(refused).to.deep.equal({
        allowed: false,
        states: [{ key: 'ws:default:all:day:0', spentPico: 7n, reservedPico: 60n, limitPico: 100n }],
      });
      expect(await store.budgetStates([check(10_000_000_000_000)])).to.deep.equal(refused.states);
    });

    it("reserving nothing leaves the holder's earlier reservation in place", async () => {
      await store.reserve([check(10_000_000_000_000)], 'a', 50n, 60_000);
      expect((await store.reserve([check(10_000_000_000_000)], 'a', 0n, 60_000)).states[0].reservedPico).to.equal(50n);
    });

    it('each reservation lapses at the end of its own lease, whatever order they were made in', async () => {
      const c = check(10_000_000_000_000, 1000n);
      await store.reserve([c], 'short', 10n, 40);
      await store.reserve([c], 'medium', 30n, 41);
      await store.reserve([c], 'long', 20n, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect((await store.budgetStates([c]))[0].reservedPico).to.equal(20n);
    });

    it('renewing a budget the store does not hold yet does nothing', async () => {
      await store.renewReservation([check(10_000_000_000_000)], 'a', 60_000);
      expect(await store.budgetStates([check(10_000_000_000_000)])).to.deep.equal([
        { key: 'ws:default:all:day:0', spentPico: 7n, reservedPico: 0n, limitPico: 100n },
      ]);
    });
  });

  describe('stream slots', () => {
    it('each lease lapses at its own end, whatever order the slots were taken in', async () => {
      await store.acquireSlot('streams', 'a', 3, 100, 0); // ends at 100
      await store.acquireSlot('streams', 'c', 3, 200, 0); // ends at 200
      await store.acquireSlot('streams', 'b', 3, 1000, 0); // ends at 1000
      expect(await store.acquireSlot('streams', 'd', 3, 1000, 150)).to.deep.equal({ acquired: true, inUse: 3 }); // a lapsed
      expect(await store.acquireSlot('streams', 'e', 3, 1000, 250)).to.deep.equal({ acquired: true, inUse: 3 }); // c lapsed
      expect(await store.acquireSlot('streams', 'f', 3, 1000, 300)).to.deep.equal({ acquired: false, inUse: 3 });
    });
  });

  describe('sweeping idle entries', () => {
    it('drops a fixed window a day after it began, not before', async () => {
      await store.addToWindow('tpm', 60_000, 5, 120_000); // the window starting at 120,000
      sweep(store, 120_000 + 86_400_000);
      expect(await store.windowTotal('tpm', 60_000, 120_000)).to.equal(5);
      sweep(store, 120_000 + 86_400_001);
      expect(await store.windowTotal('tpm', 60_000, 120_000)).to.equal(0);
    });

    it('keeps the current window', async () => {
      await store.addToWindow('tpm', 60_000, 5, 120_000);
      sweep(store, 150_000);
      expect(await store.windowTotal('tpm', 60_000, 120_000)).to.equal(5);
    });

    it('drops a budget once its period has ended, after which it reads as its seed again', async () => {
      await store.settle([check(1000)], 'a', 40n);
      sweep(store, 1000);
      expect((await store.budgetStates([check(1000)]))[0].spentPico).to.equal(47n);
      sweep(store, 1001);
      expect((await store.budgetStates([check(1000)]))[0].spentPico).to.equal(7n);
    });

    it('drops a set after the latest time any member was kept until', async () => {
      await store.addToSet('tags', 'acme', 2000);
      await store.addToSet('tags', 'globex', 1000);
      sweep(store, 2000);
      expect(await store.setRange('tags', undefined, 10)).to.deep.equal(['acme', 'globex']);
      sweep(store, 2001);
      expect(await store.setRange('tags', undefined, 10)).to.deep.equal([]);
    });

    it('drops a token bucket only once it is full again', async () => {
      await store.take([bucket], 0); // 1 left: full again at 500
      sweep(store, 499);
      expect((await store.take([bucket], 0)).buckets[0].remaining).to.equal(0); // still the same bucket
      const other = new MemoryLimitStore();
      await other.take([bucket], 0);
      sweep(other, 500);
      expect((await other.take([bucket], 0)).buckets[0].remaining).to.equal(1); // dropped: full
      await other.close();
    });

    it('drops a refunded bucket only once it is full again', async () => {
      const refunded = async (sweptAt: number) => {
        const s = new MemoryLimitStore();
        await s.take([bucket], 0);
        await s.take([bucket], 0);
        await s.refund([bucket], 0); // 1 token: full again at 500
        sweep(s, sweptAt);
        const { remaining } = (await s.take([bucket], 0)).buckets[0];
        await s.close();
        return remaining;
      };
      expect(await refunded(499)).to.equal(0);
      expect(await refunded(500)).to.equal(1);
    });

    it('frees stream slots whose lease ended', async () => {
      await store.acquireSlot('streams', 'a', 1, 100, 0); // lease ends at 100
      sweep(store, 99);
      expect(await store.acquireSlot('streams', 'b', 1, 100, 50)).to.deep.equal({ acquired: false, inUse: 1 });
      sweep(store, 100);
      expect(await store.acquireSlot('streams', 'b', 1, 100, 50)).to.deep.equal({ acquired: true, inUse: 1 });
    });

    it('runs on its own timer', async () => {
      const swept = new MemoryLimitStore(5);
      await swept.addToSet('tags', 'acme', Date.now() - 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await swept.setRange('tags', undefined, 10)).to.deep.equal([]);
      await swept.close();
    });
  });
});
