/**
 * The alert outbox on both stores: an alert id stored once per channel, delivered in order, each claimed by one
 * instance at a time (two stores on the same database race for it), released to another once its lease lapses.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { openStore } from '../../storage';
import type { AlertOutbox } from '../../storage/alert-outbox';
import type { UsageStore } from '../../storage/store';
import { requirePostgres } from '../helpers/services';

const alert = (id: string, at: number) => ({
  alertId: id,
  kind: 'budget.threshold',
  workspace: 'w',
  createdAt: at,
  body: `{"alert_id":"${id}"}`,
});

function outboxSuite(name: string, url: (ctx: Mocha.Context) => Promise<string>, cleanup: () => Promise<void>) {
  describe(`alert outbox on ${name}`, () => {
    let a: UsageStore;
    let b: UsageStore;
    let one: AlertOutbox;
    let two: AlertOutbox;
    before(async function () {
      const where = await url(this);
      a = await openStore(where.split('#')[0], { schema: where.split('#')[1] || undefined });
      await a.migrate();
      b = await openStore(where.split('#')[0], { schema: where.split('#')[1] || undefined });
      one = a.alertOutbox!();
      two = b.alertOutbox!();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await cleanup();
    });

    it('stores an alert id once per channel, however often and by whichever instance it is raised', async () => {
      expect(await one.enqueue(alert('x1', 1000), ['ops', 'slack'])).to.equal(2);
      expect(await two.enqueue(alert('x1', 1001), ['ops', 'slack'])).to.equal(0);
      expect(await one.enqueue(alert('x2', 1002), ['ops'])).to.equal(1);
      expect((await one.list(10, null)).map((r) => [r.alertId, r.channel])).to.deep.equal([
        ['x2', 'ops'],
        ['x1', 'slack'],
        ['x1', 'ops'],
      ]);
    });

    it('claims only the oldest undelivered alert of a channel, one instance at a time, in order', async () => {
      const now = 10_000;
      const [c1, c2] = await Promise.all([
        one.claimNext('ops', 'instance-1', now, now + 5000),
        two.claimNext('ops', 'instance-2', now, now + 5000),
      ]);
      const claimed = [c1, c2].filter((c) => c !== undefined);
      expect(
        claimed.map((c) => c!.alertId),
        'one winner, the oldest',
      ).to.deep.equal(['x1']);
      const owner = c1 ? 'instance-1' : 'instance-2';
      // Failed: due again later; the next alert waits behind it.
      await one.markFailed(claimed[0]!.seq, owner, now + 1000, 'HTTP 503');
      expect(await two.claimNext('ops', 'instance-2', now + 500, now + 5500)).to.equal(undefined);
      const again = await two.claimNext('ops', 'instance-2', now + 1000, now + 6000);
      expect(again).to.deep.include({ alertId: 'x1', attempts: 1, lastError: 'HTTP 503' });
      // Its holder died: nobody else takes it until the lease lapses.
      expect(await one.claimNext('ops', 'instance-1', now + 2000, now + 7000)).to.equal(undefined);
      const taken = await one.claimNext('ops', 'instance-1', now + 6000, now + 11_000);
      expect(taken?.alertId).to.equal('x1');
      await two.markSent(taken!.seq, 'instance-2', now + 6001); // the old holder's late answer changes nothing
      await one.markSent(taken!.seq, 'instance-1', now + 6002);
      expect((await one.claimNext('ops', 'instance-1', now + 6003, now + 11_003))?.alertId).to.equal('x2');
      const sent = (await one.list(10, null)).find((r) => r.alertId === 'x1' && r.channel === 'ops')!;
      expect(sent).to.deep.include({ state: 'sent', sentAt: now + 6002, attempts: 2, lastError: null });
    });

    it('two instances racing for a queue never claim the same alert twice', async () => {
      for (let i = 0; i < 20; i++) await one.enqueue(alert(`race-${i}`, 20_000 + i), ['race']);
      const order: string[] = [];
      const worker = (outbox: AlertOutbox, owner: string) => async () => {
        for (let idle = 0; idle < 40 && order.length < 20;) {
          const now = Date.now();
          const row = await outbox.claimNext('race', owner, now, now + 60_000).catch(() => undefined);
          if (!row) {
            idle++;
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          order.push(row.alertId);
          await outbox.markSent(row.seq, owner, now);
        }
      };
      await Promise.all([worker(one, 'instance-1')(), worker(two, 'instance-2')()]);
      expect(order).to.deep.equal(Array.from({ length: 20 }, (_, i) => `race-${i}`));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'tollgate-outbox-'));
outboxSuite(
  'SQLite',
  async () => `sqlite:${join(dir, 'outbox.db')}`,
  async () => rmSync(dir, { recursive: true, force: true }),
);

const schema = `tg_outbox_${process.pid}_${Date.now().toString(36)}`;
outboxSuite(
  'PostgreSQL (DATABASE_URL)',
  async (ctx) => `${await requirePostgres(ctx, 'alert outbox on PostgreSQL')}#${schema}`,
  async () => {
    if (!process.env.DATABASE_URL) return;
    const c = new Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  },
);
