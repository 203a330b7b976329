/**
 * One LimitStore conformance suite, run against MemoryLimitStore (always) and RedisLimitStore (REDIS_URL;
 * helpers/services.ts when it is unset), plus Redis-only checks: atomicity across two connections, batching of the operations of one turn,
 * fail-fast when Redis is down, key expiry, and identical results to the memory store on a random sequence of
 * operations.
 */
import { expect } from 'chai';
import Redis from 'ioredis';
import { freePort, startRedis } from '../helpers/redis-server';
import { requireRedis, requireRedisServer } from '../helpers/services';
import { waitFor } from '../helpers/wait';
import type { BudgetCheck, LimitStore } from '../../contracts/limit-store';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { BUDGET_MAX_PICO, RedisLimitStore } from '../../services/limit-store/redis-store';

/** Fixed caller clock, on a minute boundary, so the results do not depend on when the tests run. */
const T0 = Date.UTC(2025, 0, 1);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Budget periods end in the future: their keys' TTLs run on the Redis clock. */
const P1 = Math.floor(Date.now() / DAY) * DAY + 30 * DAY;
const P2 = P1 + 30 * DAY;

let seq = 0;
/** A key no other test touches. */
const uniq = (name: string) => `${name}-${++seq}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function budget(key: string, limitPico: bigint, seedPico = 0n, periodEndMs = P1): BudgetCheck {
  return { key, limitPico, seedPico, periodEndMs };
}

function conformance(label: string, open: () => LimitStore): void {
  describe(`LimitStore conformance: ${label}`, () => {
    let store: LimitStore;
    before(() => {
      store = open();
    });
    after(() => store?.close());

    describe('token buckets', () => {
      it('admits exactly `limit` takes at the edge, then refuses with retry-after ≈ windowMs / limit', async () => {
        const b = { key: uniq('edge'), limit: 10, windowMs: 60_000 };
        for (let i = 1; i <= 10; i++) {
          const r = await store.take([b], T0);
          expect(r.allowed, `take ${i}`).to.equal(true);
          expect(r.buckets[0]).to.include({ key: b.key, limit: 10, remaining: 10 - i, retryAfterMs: 0 });
        }
        const refused = await store.take([b], T0);
        expect(refused.allowed).to.equal(false);
        expect(refused.buckets[0]).to.include({ remaining: 0, resetMs: 60_000 });
        expect(refused.buckets[0].retryAfterMs).to.be.closeTo(6_000, 1);
        expect((await store.take([b], T0)).allowed, 'a refusal takes nothing and frees nothing').to.equal(false);
      });

      it('refills continuously over time, capped at the limit', async () => {
        const b = { key: uniq('refill'), limit: 4, windowMs: 1_000 }; // one token per 250 ms
        for (let i = 0; i < 4; i++) expect((await store.take([b], T0)).allowed).to.equal(true);
        const early = await store.take([b], T0 + 249);
        expect(early.allowed).to.equal(false);
        expect(early.buckets[0].retryAfterMs).to.be.closeTo(1, 1);
        const one = await store.take([b], T0 + 250);
        expect(one.allowed).to.equal(true);
        expect(one.buckets[0]).to.include({ remaining: 0, resetMs: 1_000 });
        const half = await store.take([b], T0 + 250 + 625); // 2.5 tokens back, 1.5 left after this take
        expect(half.buckets[0]).to.include({ remaining: 1, resetMs: 625 });
        const full = await store.take([b], T0 + 60_000);
        expect(full.buckets[0]).to.include({ remaining: 3, resetMs: 250 });
      });

      it('takes from several buckets all or nothing', async () => {
        const a = { key: uniq('all-a'), limit: 1, windowMs: 1_000 };
        const b = { key: uniq('all-b'), limit: 3, windowMs: 1_000 };
        const first = await store.take([a, b], T0);
        expect(first.allowed).to.equal(true);
        expect(first.buckets.map((s) => s.remaining)).to.deep.equal([0, 2]);
        const second = await store.take([a, b], T0);
        expect(second.allowed).to.equal(false);
        expect(second.buckets[0]).to.include({ key: a.key, remaining: 0, retryAfterMs: 1_000 });
        expect(second.buckets[1]).to.include({ key: b.key, remaining: 2, retryAfterMs: 0 });
        const bAlone = await store.take([b], T0);
        expect(bAlone.buckets[0].remaining, 'the refused call took nothing from b').to.equal(1);
      });

      it('reports remaining and resetMs', async () => {
        const b = { key: uniq('state'), limit: 60, windowMs: 60_000 }; // one token per second
        const r1 = await store.take([b], T0);
        expect(r1.buckets[0]).to.deep.equal({ key: b.key, limit: 60, remaining: 59, resetMs: 1_000, retryAfterMs: 0 });
        for (let i = 0; i < 9; i++) await store.take([b], T0);
        const r10 = await store.take([b], T0);
        expect(r10.buckets[0]).to.include({ remaining: 49, resetMs: 11_000 });
        const later = await store.take([b], T0 + 5_000); // 49 + 5 - 1
        expect(later.buckets[0]).to.include({ remaining: 53, resetMs: 7_000 });
      });

      it('refund gives one token back to each bucket, never above its limit', async () => {
        const a = { key: uniq('refund-a'), limit: 2, windowMs: HOUR };
        const b = { key: uniq('refund-b'), limit: 5, windowMs: HOUR };
        await store.take([a, b], T0);
        await store.take([a, b], T0);
        expect((await store.take([a], T0)).allowed).to.equal(false);
        await store.refund([a, b], T0);
        const again = await store.take([a, b], T0);
        expect(again.allowed, 'the refunded token is usable').to.equal(true);
        expect(again.buckets.map((x) => x.remaining)).to.deep.equal([0, 3]);
        await store.refund([b], T0);
        await store.refund([b], T0);
        await store.refund([b], T0); // 3 + 3 would pass the limit of 5
        expect((await store.take([b], T0)).buckets[0].remaining).to.equal(4);
      });

      it('treats an empty list as allowed', async () => {
        expect(await store.take([], T0)).to.deep.equal({ allowed: true, buckets: [] });
      });
    });

    describe('fixed windows', () => {
      it('adds to the window holding now and returns the running total', async () => {
        const k = uniq('win');
        expect(await store.windowTotal(k, 60_000, T0)).to.equal(0);
        expect(await store.addToWindow(k, 60_000, 5, T0 + 1_000)).to.equal(5);
        expect(await store.addToWindow(k, 60_000, 7, T0 + 59_999)).to.equal(12);
        expect(await store.windowTotal(k, 60_000, T0 + 30_000)).to.equal(12);
      });

      it('starts a new window at the boundary', async () => {
        const k = uniq('win-next');
        await store.addToWindow(k, 60_000, 9, T0 + 59_000);
        expect(await store.windowTotal(k, 60_000, T0 + 60_000)).to.equal(0);
        expect(await store.addToWindow(k, 60_000, 3, T0 + 60_000)).to.equal(3);
        expect(await store.windowTotal(k, 60_000, T0 + 119_999)).to.equal(3);
        expect(await store.windowTotal(k, 60_000, T0 + 120_000)).to.equal(0);
      });

      it('adds fractional amounts with double arithmetic', async () => {
        const k = uniq('win-frac');
        await store.addToWindow(k, 1_000, 0.1, T0);
        expect(await store.addToWindow(k, 1_000, 0.2, T0)).to.equal(0.1 + 0.2);
      });
    });

    describe('slots', () => {
      it('refuses past the limit', async () => {
        const k = uniq('slots');
        expect(await store.acquireSlot(k, 'a', 2, 10_000, T0)).to.deep.equal({ acquired: true, inUse: 1 });
        expect(await store.acquireSlot(k, 'b', 2, 10_000, T0)).to.deep.equal({ acquired: true, inUse: 2 });
        expect(await store.acquireSlot(k, 'c', 2, 10_000, T0)).to.deep.equal({ acquired: false, inUse: 2 });
      });

      it('frees a slot on release', async () => {
        const k = uniq('slots-release');
        await store.acquireSlot(k, 'a', 1, 10_000, T0);
        expect((await store.acquireSlot(k, 'b', 1, 10_000, T0)).acquired).to.equal(false);
        await store.releaseSlot(k, 'a');
        await store.releaseSlot(k, 'nobody'); // no-op
        expect(await store.acquireSlot(k, 'b', 1, 10_000, T0)).to.deep.equal({ acquired: true, inUse: 1 });
      });

      it('frees a slot whose lease expired (a crashed holder)', async () => {
        const k = uniq('slots-expire');
        await store.acquireSlot(k, 'a', 2, 1_000, T0);
        await store.acquireSlot(k, 'b', 2, 5_000, T0);
        expect((await store.acquireSlot(k, 'c', 2, 1_000, T0 + 999)).acquired).to.equal(false);
        expect(await store.acquireSlot(k, 'c', 2, 1_000, T0 + 1_000)).to.deep.equal({ acquired: true, inUse: 2 });
      });

      it('keeps a renewed slot', async () => {
        const k = uniq('slots-renew');
        await store.acquireSlot(k, 'a', 2, 1_000, T0);
        await store.acquireSlot(k, 'b', 2, 1_000, T0);
        await store.renewSlot(k, 'a', 1_000, T0 + 900); // a now until T0 + 1900, b ends at T0 + 1000
        expect(await store.acquireSlot(k, 'c', 2, 1_000, T0 + 1_500)).to.deep.equal({ acquired: true, inUse: 2 });
        expect(await store.acquireSlot(k, 'd', 2, 1_000, T0 + 1_500)).to.deep.equal({ acquired: false, inUse: 2 });
      });

      it('does not create a slot on renewing a holder it does not know', async () => {
        const k = uniq('slots-renew-unknown');
        await store.renewSlot(k, 'ghost', 10_000, T0);
        expect(await store.acquireSlot(k, 'a', 1, 10_000, T0)).to.deep.equal({ acquired: true, inUse: 1 });
      });

      it('lets a holder re-acquire idempotently, even at the limit, extending its lease', async () => {
        const k = uniq('slots-again');
        expect(await store.acquireSlot(k, 'a', 1, 1_000, T0)).to.deep.equal({ acquired: true, inUse: 1 });
        expect(await store.acquireSlot(k, 'a', 1, 1_000, T0 + 500)).to.deep.equal({ acquired: true, inUse: 1 });
        expect(await store.acquireSlot(k, 'b', 1, 1_000, T0 + 1_200)).to.deep.equal({ acquired: false, inUse: 1 });
        expect((await store.acquireSlot(k, 'b', 1, 1_000, T0 + 1_500)).acquired).to.equal(true);
      });

      it('with many holders, each lease lapses exactly at its end, whether the earliest were released or renewed', async () => {
        const k = uniq('slots-many');
        // h0..h39 end at T0 + 100, + 200, ... + 4,000. h0-h9 are released, h10-h19 renewed to end at T0 + 10,000.
        for (let i = 0; i < 40; i++) await store.acquireSlot(k, `h${i}`, 1_000, 100 * (i + 1), T0);
        for (let i = 0; i < 10; i++) await store.releaseSlot(k, `h${i}`);
        for (let i = 10; i < 20; i++) await store.renewSlot(k, `h${i}`, 10_000 - 50, T0 + 50);
        const openAt = async (t: number) => {
          const { inUse } = await store.acquireSlot(k, 'probe', 1_000, 1, t); // the probe itself counts, and lapses 1 ms later
          await store.releaseSlot(k, 'probe');
          return inUse - 1;
        };
        expect(await openAt(T0 + 2_099)).to.equal(30); // h10-h39: h20 ends at T0 + 2,100
        expect(await openAt(T0 + 2_100)).to.equal(29);
        expect(await openAt(T0 + 3_050)).to.equal(20);
        expect(await openAt(T0 + 4_000)).to.equal(10); // only the renewed ones
        expect(await openAt(T0 + 9_999)).to.equal(10);
        expect(await openAt(T0 + 10_000)).to.equal(0);
      });
    });

    describe('budgets', () => {
      const LEASE = 60_000;
      const now = async (c: BudgetCheck) => (await store.budgetStates([c]))[0];

      it('reserves within the limit, up to exactly the limit, and refuses over it', async () => {
        const c = budget(uniq('bud'), 100n);
        const r1 = await store.reserve([c], 'r1', 60n, LEASE);
        expect(r1).to.deep.equal({
          allowed: true,
          states: [{ key: c.key, spentPico: 0n, reservedPico: 60n, limitPico: 100n }],
        });
        expect((await store.reserve([c], 'r2', 40n, LEASE)).states[0].reservedPico).to.equal(100n);
        const over = await store.reserve([c], 'r3', 1n, LEASE);
        expect(over.allowed).to.equal(false);
        expect(over.states[0]).to.include({ spentPico: 0n, reservedPico: 100n });
      });

      it('counts a budget whose seed is pending from 0, and adds the seed once read (only to a budget created pending)', async () => {
        const c = { ...budget(uniq('bud-pending'), 100n, 0n), seedPending: true };
        await store.settle([c], 'r1', 7n);
        expect((await now(c)).spentPico).to.equal(7n);
        c.seedPending = false;
        await store.seedBudget(c, 30n);
        await store.seedBudget(c, 30n); // once
        expect((await now(c)).spentPico).to.equal(37n);
        const known = budget(uniq('bud-known'), 100n, 5n);
        await store.settle([known], 'r1', 1n);
        await store.seedBudget(known, 30n); // created with its seed: left alone
        expect((await now(known)).spentPico).to.equal(6n);
      });

      it('raises spent to the recorded spend, never lowers it, and creates a missing budget with it', async () => {
        const c = budget(uniq('bud-raise'), 100n, 10n);
        await store.settle([c], 'r1', 5n);
        expect((await store.raiseSpend(c, 40n)).spentPico).to.equal(40n);
        expect((await store.raiseSpend(c, 20n)).spentPico).to.equal(40n);
        const missing = budget(uniq('bud-raise-missing'), 100n, 3n);
        expect((await store.raiseSpend(missing, 25n)).spentPico).to.equal(25n);
        // A raise reads records that hold the pending seed too: a later seedBudget adds nothing.
        const pending = { ...budget(uniq('bud-raise-pending'), 100n), seedPending: true };
        await store.settle([pending], 'r1', 5n);
        await store.raiseSpend(pending, 50n);
        await store.seedBudget(pending, 45n);
        expect((await now(pending)).spentPico).to.equal(50n);
      });

      it('reserves on several budgets all or nothing', async () => {
        const a = budget(uniq('bud-a'), 100n);
        const b = budget(uniq('bud-b'), 50n, 30n);
        expect((await store.reserve([a, b], 'r1', 20n, LEASE)).allowed).to.equal(true);
        const refused = await store.reserve([a, b], 'r2', 10n, LEASE); // b: 30 + 20 + 10 > 50
        expect(refused.allowed).to.equal(false);
        expect(refused.states.map((s) => [s.spentPico, s.reservedPico])).to.deep.equal([
          [0n, 20n],
          [30n, 20n],
        ]);
        expect((await now(a)).reservedPico, 'a kept nothing from the refusal').to.equal(20n);
        await store.settle([a, b], 'r2', 0n); // settling a refused request releases nothing
        expect((await store.budgetStates([a, b])).map((s) => s.reservedPico)).to.deep.equal([20n, 20n]);
      });

      it('settles by request id: releases that reservation once, and adds the actual cost', async () => {
        const c = budget(uniq('bud-settle'), 100n);
        await store.reserve([c], 'r1', 50n, LEASE);
        await store.reserve([c], 'r2', 20n, LEASE);
        expect(await store.settle([c], 'r1', 30n)).to.deep.equal([
          { key: c.key, spentPico: 30n, reservedPico: 20n, limitPico: 100n },
        ]);
        await store.settle([c], 'r1', 0n); // a repeated settle releases nothing more
        expect(await now(c)).to.include({ spentPico: 30n, reservedPico: 20n });
        await store.settle([c], 'r2', 5n);
        expect(await now(c)).to.include({ spentPico: 35n, reservedPico: 0n });
        expect((await store.reserve([c], 'r3', 66n, LEASE)).allowed).to.equal(false);
        expect((await store.reserve([c], 'r4', 65n, LEASE)).allowed).to.equal(true);
      });

      it('a reservation whose settlement never comes lapses after its lease; a renewed one stays', async () => {
        const c = budget(uniq('bud-lease'), 100n);
        expect((await store.reserve([c], 'lost', 60n, 600)).allowed).to.equal(true);
        expect((await store.reserve([c], 'alive', 30n, 600)).allowed).to.equal(true);
        expect((await store.reserve([c], 'r3', 20n, LEASE)).allowed, '60 + 30 + 20 > 100 while both hold').to.equal(
          false,
        );
        await sleep(300);
        await store.renewReservation([c], 'alive', 600);
        await store.renewReservation([c], 'ghost', 600); // renewing an unknown holder creates nothing
        await sleep(400); // 'lost' lapsed at 600 ms, 'alive' renewed at 300 holds until 900
        expect(await now(c)).to.include({ spentPico: 0n, reservedPico: 30n });
        expect((await store.reserve([c], 'r3', 70n, LEASE)).allowed).to.equal(true);
        await store.settle([c], 'lost', 7n); // a settle after the lapse adds the cost and releases nothing
        expect(await now(c)).to.include({ spentPico: 7n, reservedPico: 100n });
      });

      it('reports states without reserving; a budget not in the store yet shows its seed', async () => {
        const c = budget(uniq('bud-states'), 100n, 12n);
        expect(await now(c)).to.deep.equal({ key: c.key, spentPico: 12n, reservedPico: 0n, limitPico: 100n });
        await store.reserve([c], 'r1', 0n, LEASE); // amount 0: checks only, holds nothing
        await store.settle([c], 'r1', 3n);
        expect(await now({ ...c, seedPico: 99n }), 'the seed is used once').to.include({
          spentPico: 15n,
          reservedPico: 0n,
        });
      });

      it('applies the seed once, when the budget is first seen', async () => {
        const key = uniq('bud-seed');
        expect((await store.reserve([budget(key, 100n, 40n)], 'r1', 0n, LEASE)).states[0].spentPico).to.equal(40n);
        await store.settle([budget(key, 100n, 40n)], 'r1', 10n);
        const later = await store.reserve([budget(key, 100n, 70n)], 'r2', 0n, LEASE); // the usage store caught up: ignored
        expect(later.states[0].spentPico).to.equal(50n);
      });

      it('seeds a budget first seen at settle time', async () => {
        const c = budget(uniq('bud-settle-first'), 100n, 7n);
        await store.settle([c], 'r1', 3n);
        expect(await now(c)).to.include({ spentPico: 10n, reservedPico: 0n });
      });

      it('starts a new period fresh, from its own seed', async () => {
        const key = uniq('bud-period');
        await store.reserve([budget(key, 100n, 90n, P1)], 'r1', 10n, LEASE);
        const next = await store.reserve([budget(key, 100n, 5n, P2)], 'r2', 95n, LEASE);
        expect(next.allowed).to.equal(true);
        expect(next.states[0]).to.include({ spentPico: 5n, reservedPico: 95n });
      });

      it('a late settle of a request admitted in the previous period leaves the new period alone', async () => {
        const key = uniq('bud-rollover');
        const old = budget(key, 100n, 0n, P1);
        const cur = budget(key, 100n, 0n, P2);
        await store.reserve([old], 'long', 60n, LEASE); // a long stream admitted just before the period ended
        expect((await store.reserve([cur], 'r2', 70n, LEASE)).allowed).to.equal(true); // a request in the new period
        await store.settle([old], 'long', 50n); // the long stream ends
        const after = await store.reserve([cur], 'r3', 40n, LEASE);
        expect(after.allowed, '70 + 40 > 100 in the new period').to.equal(false);
        expect(after.states[0]).to.include({ spentPico: 0n, reservedPico: 70n });
      });

      it('remembers set members (e.g. the tag values a per-tag budget met)', async () => {
        const k = uniq('set');
        expect(await store.setRange(k, undefined, 10)).to.deep.equal([]);
        await store.addToSet(k, 'acme', P1);
        await store.addToSet(k, 'globex', P1);
        await store.addToSet(k, 'acme', P1);
        expect(await store.setRange(k, undefined, 10)).to.deep.equal(['acme', 'globex']);
      });

      it('pages set members from a member on, in code-point order (the order both stores agree on)', async () => {
        const k = uniq('set-page');
        // U+E000 sorts before U+1F600 by code point, after it by UTF-16 code unit.
        const values = ['b', 'a', '\u{1F600}', '\uE000', 'c', 'ab'];
        for (const v of values) await store.addToSet(k, v, P1);
        expect(await store.setRange(k, undefined, 3)).to.deep.equal(['a', 'ab', 'b']);
        expect(await store.setRange(k, 'b', 3)).to.deep.equal(['c', '\uE000', '\u{1F600}']);
        expect(await store.setRange(k, 'bb', 10)).to.deep.equal(['c', '\uE000', '\u{1F600}']);
        expect(await store.setRange(k, '\u{1F600}', 3)).to.deep.equal([]);
      });

      it(`keeps bigint amounts exact up to the bound (${BUDGET_MAX_PICO} pico-USD)`, async () => {
        const dollar = 10n ** 12n;
        const edge = budget(uniq('bud-max'), BUDGET_MAX_PICO, BUDGET_MAX_PICO - dollar - 5n);
        const r = await store.reserve([edge], 'e1', dollar + 5n, LEASE);
        expect(r.allowed).to.equal(true);
        expect(r.states[0]).to.include({ spentPico: BUDGET_MAX_PICO - dollar - 5n, reservedPico: dollar + 5n });
        expect((await store.reserve([edge], 'e2', 1n, LEASE)).allowed, 'one pico over').to.equal(false);
        await store.settle([edge], 'e1', dollar + 4n);
        expect((await store.reserve([edge], 'e3', 1n, LEASE)).states[0]).to.include({
          spentPico: BUDGET_MAX_PICO - 1n,
          reservedPico: 1n,
        });
        expect((await store.reserve([edge], 'e4', 1n, LEASE)).allowed).to.equal(false);

        // Past 2^53 (doubles) and 2^63 (Redis INCRBY), with carries and borrows across the 10^12 limb.
        const big = budget(uniq('bud-big'), 2n ** 70n, 2n ** 63n + dollar - 1n);
        await store.reserve([big], 'b1', 1n, LEASE);
        await store.reserve([big], 'b2', 2n ** 53n + 1n, LEASE);
        await store.settle([big], 'b1', 2n ** 64n + 1n);
        const s = await now(big);
        expect(s.spentPico).to.equal(2n ** 63n + dollar - 1n + 2n ** 64n + 1n);
        expect(s.reservedPico).to.equal(2n ** 53n + 1n);
        await store.reserve([big], 'b3', dollar - 1n, LEASE);
        await store.settle([big], 'b2', 0n);
        expect((await now(big)).reservedPico).to.equal(dollar - 1n);
      });
    });
  });
}

conformance('MemoryLimitStore', () => new MemoryLimitStore());

describe('MemoryLimitStore.forgetBudget', () => {
  it('drops an idle budget (its seed counts again when next used) and keeps one with an open reservation', async () => {
    const store = new MemoryLimitStore();
    const idle = budget(uniq('forget-idle'), 100n, 10n);
    await store.settle([idle], 'r1', 5n);
    store.forgetBudget(idle);
    expect(store.budgetCount).to.equal(0);
    expect((await store.budgetStates([idle]))[0].spentPico).to.equal(10n);
    const held = budget(uniq('forget-held'), 100n);
    await store.reserve([held], 'r1', 20n, 60_000);
    store.forgetBudget(held);
    expect((await store.budgetStates([held]))[0].reservedPico).to.equal(20n);
    await store.close();
  });
});

/** REDIS_URL, once Redis answered (the suite's first hook). */
let url: string;
const prefix = `tollgate-test:${process.pid}:${Date.now()}:`;
const stores: RedisLimitStore[] = [];
/** A connected store under the test prefix, closed after the suite. */
async function redisStore(opts: { keyPrefix?: string } = {}): Promise<RedisLimitStore> {
  const s = new RedisLimitStore(url, { keyPrefix: opts.keyPrefix ?? prefix, commandTimeoutMs: 2_000 });
  stores.push(s);
  await s.ping();
  return s;
}

describe('RedisLimitStore', () => {
  let admin: Redis;
  before(async function () {
    url = await requireRedis(this, 'Redis limit-store suite');
    admin = new Redis(url, { maxRetriesPerRequest: 1 });
    await admin.ping();
  });
  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    if (!admin) return;
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length) await admin.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await admin.quit();
  });

  conformance('RedisLimitStore', () => new RedisLimitStore(url, { keyPrefix: prefix }));

  describe('atomic across instances', () => {
    it('two instances racing 200 takes against a bucket of 50 admit exactly 50', async () => {
      const [s1, s2] = [await redisStore(), await redisStore()];
      const b = { key: uniq('race'), limit: 50, windowMs: HOUR }; // refill during the race: < 0.01 token
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? s1 : s2).take([b])));
      expect(results.filter((r) => r.allowed)).to.have.length(50);
      expect(results.filter((r) => !r.allowed).every((r) => r.buckets[0].retryAfterMs > 0)).to.equal(true);
    });

    it('two instances racing for slots never exceed the limit', async () => {
      const [s1, s2] = [await redisStore(), await redisStore()];
      const k = uniq('race-slots');
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? s1 : s2).acquireSlot(k, `h${i}`, 5, 60_000)),
      );
      expect(results.filter((r) => r.acquired)).to.have.length(5);
      expect(Math.max(...results.map((r) => r.inUse))).to.equal(5);
      expect(await admin.zcard(`${prefix}slots:${k}`)).to.equal(5);
    });

    it('two instances racing reservations never overspend a budget', async () => {
      const [s1, s2] = [await redisStore(), await redisStore()];
      const c = budget(uniq('race-budget'), 1_000n);
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (i % 2 ? s1 : s2).reserve([c], `r${i}`, 50n, 60_000)),
      );
      expect(results.filter((r) => r.allowed)).to.have.length(20);
      expect((await s1.budgetStates([c]))[0].reservedPico).to.equal(1_000n);
    });
  });

  describe('batching', () => {
    /** Script calls the Redis server has run so far (EVAL the first time on a connection, EVALSHA after). */
    async function scriptCalls(): Promise<number> {
      const stats = await admin.info('commandstats');
      let calls = 0;
      for (const m of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(m[1]);
      return calls;
    }

    it('sends the operations issued in one turn as one script call, each with its own result', async () => {
      const s = await redisStore();
      const b = { key: uniq('batch'), limit: 10, windowMs: HOUR };
      const w = uniq('batch-win');
      const before = await scriptCalls();
      const [takes, added, total] = await Promise.all([
        Promise.all(Array.from({ length: 12 }, () => s.take([b], T0))),
        s.addToWindow(w, 60_000, 5, T0),
        s.windowTotal(w, 60_000, T0),
      ]);
      // this suite's own admin client runs no script; one call carried all 14 operations
      expect((await scriptCalls()) - before).to.equal(1);
      expect(takes.map((t) => t.allowed)).to.deep.equal([...Array(10).fill(true), false, false]);
      expect(takes.map((t) => t.buckets[0].remaining)).to.deep.equal([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0]);
      expect([added, total]).to.deep.equal([5, 5]); // in order: the add ran before the read
    });

    it('splits a turn of more than 128 operations into several calls, and answers every one', async () => {
      const s = await redisStore();
      const b = { key: uniq('batch-big'), limit: 250, windowMs: HOUR };
      const before = await scriptCalls();
      const takes = await Promise.all(Array.from({ length: 300 }, () => s.take([b], T0)));
      expect((await scriptCalls()) - before).to.equal(3);
      expect(takes.filter((t) => t.allowed)).to.have.length(250);
      expect(takes.slice(250).every((t) => !t.allowed)).to.equal(true);
    });

    it('fails an operation alone when Redis refuses it, without opening the circuit breaker', async () => {
      const s = await redisStore();
      const broken = { key: uniq('batch-wrongtype'), limit: 5, windowMs: HOUR };
      await admin.set(`${prefix}bucket:${broken.key}`, 'not a hash'); // HMGET on it fails: WRONGTYPE
      const good = { key: uniq('batch-good'), limit: 5, windowMs: HOUR };
      const [bad, ok] = await Promise.allSettled([s.take([broken], T0), s.take([good], T0)]);
      expect(bad.status).to.equal('rejected');
      expect(String((bad as PromiseRejectedResult).reason)).to.match(/take: .*WRONGTYPE/);
      expect(ok.status === 'fulfilled' && ok.value.allowed).to.equal(true);
      expect(s.connected, 'a refused operation says nothing about the connection').to.equal(true);
      expect((await s.take([good], T0)).buckets[0].remaining).to.equal(3);
    });
  });

  describe('time, keys and expiry', () => {
    it('uses the Redis clock when now is omitted', async () => {
      const s = await redisStore();
      const b = { key: uniq('clock'), limit: 2, windowMs: HOUR };
      expect((await s.take([b])).allowed).to.equal(true);
      const [sec] = await admin.time();
      const ts = Number(await admin.hget(`${prefix}bucket:${b.key}`, 'ts'));
      expect(ts).to.be.closeTo(Number(sec) * 1000, 2_000);
      // The window is the Redis clock's minute. Should a minute boundary pass between adding and reading, the total
      // read is that of the next minute: the check is made again, in that next minute.
      const minute = async () => {
        const [secs, usecs] = await admin.time();
        return Math.floor((Number(secs) * 1000 + Math.floor(Number(usecs) / 1000)) / 60_000);
      };
      for (let attempt = 1; ; attempt++) {
        const k = uniq('clock-win');
        const before = await minute();
        await s.addToWindow(k, 60_000, 4);
        const total = await s.windowTotal(k, 60_000);
        if ((await minute()) !== before && attempt === 1) continue;
        expect(total).to.equal(4);
        expect(await admin.hkeys(`${prefix}window:${k}`), 'the window of the Redis clock').to.deep.equal([
          String(before * 60_000),
        ]);
        break;
      }
    });

    it('lays out keys under the prefix and gives each an expiry', async () => {
      const s = await redisStore();
      const b = { key: uniq('ttl-bucket'), limit: 10, windowMs: 10_000 };
      await s.take([b], T0);
      const w = uniq('ttl-window');
      await s.addToWindow(w, 60_000, 1, T0 + 15_000);
      const sl = uniq('ttl-slots');
      await s.acquireSlot(sl, 'a', 1, 30_000, T0);
      const c = budget(uniq('ttl-budget'), 10n);
      await s.reserve([c], 'req-1', 1n, 30_000);
      const ttl = (k: string) => admin.pttl(`${prefix}${k}`);
      expect(await ttl(`bucket:${b.key}`)).to.be.within(1_000 + 59_000, 1_000 + 60_000); // full again in 1 s, + margin
      expect(await ttl(`window:${w}`)).to.be.within(45_000 + 59_000, 45_000 + 60_000); // window ends in 45 s, + margin
      expect(await ttl(`slots:${sl}`)).to.be.within(30_000 + 59_000, 30_000 + 60_000); // lease end, + margin
      const budgetTtl = await ttl(`budget:${c.key}:${P1}`);
      expect(budgetTtl).to.be.closeTo(P1 + DAY - Date.now(), 5_000); // period end + a day
      expect(await ttl(`budget:${c.key}:${P1}:leases`)).to.be.closeTo(P1 + DAY - Date.now(), 5_000);
      expect(await admin.hgetall(`${prefix}budget:${c.key}:${P1}`)).to.deep.equal({
        spent: '0',
        reserved: '1',
        'r:req-1': '1',
      });
      const [sec] = await admin.time();
      expect(Number(await admin.zscore(`${prefix}budget:${c.key}:${P1}:leases`, 'req-1'))).to.be.closeTo(
        Number(sec) * 1000 + 30_000,
        2_000,
      );
    });

    it("keeps a budget's expiry a day after its period ends, and a late call on a long-ended period 1 min from now", async () => {
      const s = await redisStore();
      const c = budget(uniq('ttl-budget-later'), 10n);
      await s.reserve([c], 'req-1', 1n, 30_000);
      await s.settle([c], 'req-1', 1n); // a later call on the same period keeps the deadline it was given
      expect(await admin.pttl(`${prefix}budget:${c.key}:${P1}`)).to.be.closeTo(P1 + DAY - Date.now(), 5_000);

      const ended = budget(uniq('ttl-budget-ended'), 10n, 0n, Math.floor(Date.now() / DAY) * DAY - 2 * DAY);
      await s.reserve([ended], 'req-2', 1n, 30_000);
      const key = `${prefix}budget:${ended.key}:${ended.periodEndMs}`;
      expect(await admin.pttl(key)).to.be.within(59_000, 60_000);
      await admin.pexpire(key, 5_000);
      await s.settle([ended], 'req-2', 1n); // still wanted: another minute from now
      expect(await admin.pttl(key)).to.be.within(59_000, 60_000);
    });

    it('keeps the other windows of a key when a lagging clock writes the previous one', async () => {
      const s = await redisStore();
      const k = uniq('win-lag');
      await s.addToWindow(k, 60_000, 5, T0 + 60_000);
      expect(await s.addToWindow(k, 60_000, 2, T0 + 59_000)).to.equal(2);
      expect(await s.windowTotal(k, 60_000, T0 + 60_001)).to.equal(5);
      await s.addToWindow(k, 60_000, 1, T0 + 180_000); // drops windows older than the previous one
      expect(await admin.hkeys(`${prefix}window:${k}`)).to.deep.equal([String(T0 + 180_000)]);
    });

    it('isolates stores by key prefix', async () => {
      const a = await redisStore({ keyPrefix: `${prefix}a:` });
      const b = await redisStore({ keyPrefix: `${prefix}b:` });
      const bucket = { key: 'same', limit: 1, windowMs: HOUR };
      expect((await a.take([bucket], T0)).allowed).to.equal(true);
      expect((await b.take([bucket], T0)).allowed).to.equal(true);
    });
  });

  describe('same results as the memory store', () => {
    it('on a random sequence of takes, refunds, window adds, slot and budget operations', async () => {
      const redis = await redisStore();
      const memory = new MemoryLimitStore();
      let seed = 42;
      const rand = (n: number) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return seed % n;
      };
      const id = uniq('diff');
      const buckets = [
        { key: `${id}-a`, limit: 3, windowMs: 1_000 },
        { key: `${id}-b`, limit: 7, windowMs: 9_000 },
        { key: `${id}-c`, limit: 100, windowMs: 60_000 },
      ];
      let now = T0;
      for (let step = 0; step < 400; step++) {
        now += rand(400);
        const op = rand(8);
        const run = async (s: LimitStore): Promise<unknown> => {
          if (op === 0)
            return s.take(
              buckets.filter(() => rand(2) === 0),
              now,
            );
          if (op === 1) return s.addToWindow(`${id}-w`, 7_000, rand(1000) / 7, now);
          if (op === 2) return s.acquireSlot(`${id}-s`, `h${rand(6)}`, 3, 2_000, now);
          if (op === 3) return s.releaseSlot(`${id}-s`, `h${rand(6)}`);
          if (op === 4)
            return s.refund(
              buckets.filter(() => rand(2) === 0),
              now,
            );
          const funds = [budget(`${id}-b1`, 1_000n), budget(`${id}-b2`, 600n, 50n)].filter(() => rand(3) > 0);
          if (op === 5) return s.reserve(funds, `h${rand(6)}`, BigInt(rand(300)), 60_000);
          if (op === 6) return s.settle(funds, `h${rand(6)}`, BigInt(rand(100)));
          return s.budgetStates(funds);
        };
        const saved = seed; // both stores draw the same random choices
        const m = await run(memory);
        seed = saved;
        expect(await run(redis), `step ${step}`).to.deep.equal(m);
      }
      await memory.close();
    });
  });

  describe('failure', () => {
    it('rejects within about a second when Redis is unreachable (fail fast)', async () => {
      const port = await freePort();
      const s = new RedisLimitStore(`redis://127.0.0.1:${port}`, { keyPrefix: prefix, commandTimeoutMs: 300 });
      try {
        for (const attempt of ['first call', 'later call']) {
          const t0 = Date.now();
          const err = await s.take([{ key: 'down', limit: 1, windowMs: 1_000 }]).then(
            () => null,
            (e: unknown) => e,
          );
          expect(err, attempt).to.be.instanceOf(Error);
          expect(Date.now() - t0, attempt).to.be.below(1_000);
          expect(s.connected).to.equal(false);
        }
        const t0 = Date.now();
        let failed = false;
        await s.reserve([budget('down', 1n)], 'r1', 1n, 1_000).catch(() => (failed = true));
        expect(failed).to.equal(true);
        expect(Date.now() - t0).to.be.below(1_000);
        await s.ping().then(
          () => expect.fail('ping should reject'),
          () => undefined,
        );
      } finally {
        await s.close();
      }
    });

    it('fails fast while its Redis is dead or hung (circuit breaker), and heals when it returns', async function () {
      requireRedisServer(this, 'RedisLimitStore outage (the test stops a private redis-server)');
      this.timeout(20_000);
      const port = await freePort();
      let server = await startRedis(port);
      const s = new RedisLimitStore(`redis://127.0.0.1:${port}`, {
        keyPrefix: prefix,
        commandTimeoutMs: 300,
        circuitBreakerMs: 1_000,
      });
      const b = { key: 'outage', limit: 100, windowMs: HOUR };
      const failsWithin = async (ms: number, label: string) => {
        const t0 = Date.now();
        const err = await s.take([b]).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, label).to.be.instanceOf(Error);
        const took = Date.now() - t0;
        expect(took, label).to.be.below(ms);
        return took;
      };
      try {
        expect((await s.take([b])).allowed).to.equal(true);
        server.kill('SIGSTOP'); // hung: the first command waits out its 300 ms time-out...
        expect(await failsWithin(1_000, 'hung server, first call')).to.be.at.least(250);
        // ...and opens the breaker: the next operations (a request runs several) fail at once.
        for (const op of ['take', 'window', 'slot', 'reserve']) {
          const t0 = Date.now();
          const call =
            op === 'take'
              ? s.take([b])
              : op === 'window'
                ? s.windowTotal('outage', 60_000)
                : op === 'slot'
                  ? s.acquireSlot('outage', 'h', 1, 10_000)
                  : s.reserve([budget('outage', 10n)], 'r', 1n, 10_000);
          expect(
            await call.then(
              () => null,
              (e: unknown) => e,
            ),
            op,
          ).to.be.instanceOf(Error);
          expect(Date.now() - t0, `${op} while the breaker is open`).to.be.below(50);
        }
        expect(s.connected).to.equal(false);
        server.kill('SIGCONT'); // back: the background probe closes the breaker within about a second
        const t0 = Date.now();
        await waitFor(() => s.connected, 5_000);
        expect(Date.now() - t0).to.be.below(2_500);
        // 97: the take that timed out on our side still ran when the server woke up; the refused ones never left.
        expect((await s.take([b])).buckets[0].remaining).to.equal(97);

        server.kill('SIGKILL');
        await new Promise((resolve) => server.once('exit', resolve));
        await failsWithin(1_000, 'dead server');
        await failsWithin(50, 'still dead: the breaker answers');
        server = await startRedis(port);
        await waitFor(() => s.connected, 5_000);
        expect((await s.take([b])).buckets[0].remaining, 'a fresh server: a fresh bucket').to.equal(99);
      } finally {
        await s.close();
        server.kill('SIGKILL');
      }
    });

    it('rejects after close, and reports health while open', async () => {
      const s = new RedisLimitStore(url, { keyPrefix: prefix });
      expect(await s.ping(), 'round trip in ms, within the default 500 ms command time-out').to.be.within(0, 500);
      expect(s.connected).to.equal(true);
      await s.close();
      expect(s.connected).to.equal(false);
      const err = await s.take([{ key: 'closed', limit: 1, windowMs: 1_000 }]).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(Error);
    });

    it('refuses budget amounts outside 0..BUDGET_MAX_PICO before touching Redis', async () => {
      const s = await redisStore();
      const c = budget(uniq('bud-range'), BUDGET_MAX_PICO);
      for (const bad of [BUDGET_MAX_PICO + 1n, -1n]) {
        const err = await s.reserve([c], 'r1', bad, 1_000).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(RangeError);
      }
      const err = await s.reserve([{ ...c, limitPico: BUDGET_MAX_PICO + 1n }], 'r1', 1n, 1_000).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(RangeError);
    });
  });
});
