/**
 * The export of every group merged and ranked by the database (storage/query/ranked.ts), read a page at a time
 * (storage/query/ranked-pages.ts), against runUsageQuery's answer (the grouping the JSON API pages): the same groups,
 * the same sums to the pico, in the same order, on every query path (rollup, tag-rollup with its "(untagged)"
 * remainder, tag-set, raw), over a range whose edges are partial hours and days, with and without a series. Against
 * SQLite always and PostgreSQL with DATABASE_URL.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UsageRecord } from '../../records/usage-record';
import { openStore } from '../../storage/open';
import { planUsageQuery } from '../../storage/query/plan';
import { rankedUsageSql } from '../../storage/query/ranked';
import { rankedRow } from '../../storage/query/run';
import { openReadConnection, type ReadConnection } from '../../storage/read-connection';
import type { UsageGroupRow, UsageQuery, UsageStore } from '../../storage/store';
import { prng } from '../helpers/prng';
import { usageRecord } from '../helpers/records';
import { dropPostgresSchema, requirePostgres } from '../helpers/services';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BASE = Date.UTC(2026, 0, 5);

/**
 * Records over four days. Costs come from few values, so that many groups tie on cost and requests and the order rests
 * on the group's values; customer ids hold what orders differently as JSON text than as plain text (a space, "!",
 * a quote, a backslash, a comma, accents), and three records of one group sum past 2^63 pico.
 */
function records(): UsageRecord[] {
  const rnd = prng(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const customers = ['acme', 'acme ', 'acme!', 'acme"x', 'acme\\', 'a,b', 'zed', 'Émile', 'émile', ''];
  // One request of each customer at the same cost: groups tied on cost and requests.
  const tied = customers.map((c, i) =>
    usageRecord({
      id: `rk-tie-${i}`,
      ts: BASE + DAY + 2 * HOUR + i,
      servedModel: 'tie-model',
      costPico: 1000n,
      provenance: 'measured',
      tags: { customer_id: c },
    }),
  );
  // A group of no cost and one whose cost is unknown: both rank as 0 (then by their values), never unknown first.
  for (const [c, cost] of [
    ['zero-cost', 0n],
    ['unknown-cost', null],
  ] as const)
    tied.push(
      usageRecord({
        id: `rk-${c}`,
        ts: BASE + DAY + 2 * HOUR + 99,
        servedModel: 'tie-model',
        costPico: cost,
        provenance: cost === null ? 'unpriced' : 'measured',
        tags: { customer_id: c },
      }),
    );
  // Three records of one group, in three hours, summing past 2^63 pico.
  const large = [0, 1, 2].map((i) =>
    usageRecord({
      id: `rk-large-${i}`,
      ts: BASE + DAY + (3 + i * 5) * HOUR + 999,
      servedModel: 'gpt-4o',
      costPico: 4_000_000_000_000_000_000n + BigInt(i),
      provenance: 'measured',
      tags: { customer_id: 'acme' },
    }),
  );
  return [
    ...tied,
    ...large,
    ...Array.from({ length: 1500 }, (_, i) => {
      const tags: Record<string, string> = {};
      if (rnd() < 0.8) tags.customer_id = pick(customers);
      if (rnd() < 0.5) tags.feature = pick(['search', 'chat']);
      const status = pick([200, 200, 200, 429, 500]);
      const unpriced = rnd() < 0.1;
      return usageRecord({
        id: `rk-${i}`,
        ts: BASE + Math.floor(rnd() * 4 * DAY),
        workspaceId: rnd() < 0.1 ? null : pick(['ws-a', 'ws-b']),
        keyId: rnd() < 0.2 ? null : pick(['k1', 'k2']),
        provider: 'openai',
        model: pick(['gpt-4o', 'gpt-4o-mini']),
        servedModel: pick(['gpt-4o', 'gpt-4o-mini', null]),
        status,
        inputTokens: pick([10, 20]),
        outputTokens: pick([null, 5]),
        costPico: unpriced ? null : pick([1000n, 2000n, 3000n]),
        provenance: unpriced ? 'unpriced' : 'measured',
        listCostPico: unpriced ? null : pick([null, 5000n]),
        errorCode: status >= 400 ? `upstream_${status}` : null,
        tags,
      });
    }),
  ];
}

/** A range starting and ending mid-hour, two days apart: raw edges, rollup hours, daily days. */
const ragged = { from: BASE + 5 * HOUR + 17 * 60_000, to: BASE + 3 * DAY + 7 * HOUR + 3 * 60_000 };

const SHAPES: Pick<UsageQuery, 'groupBy' | 'filters' | 'interval'>[] = [
  { groupBy: [] },
  { groupBy: ['model'] },
  { groupBy: ['provider', 'model', 'status'] },
  { groupBy: ['workspace', 'key_id'], interval: 'day' },
  { groupBy: ['model'], interval: 'hour' },
  { groupBy: ['customer_id'] },
  { groupBy: ['customer_id', 'model'] },
  { groupBy: ['customer_id', 'workspace'], interval: 'day' },
  { groupBy: ['model'], filters: { customer_id: 'acme' } },
  { groupBy: ['model', 'workspace'], filters: { customer_id: '(untagged)' } },
  { groupBy: ['customer_id', 'status'], filters: { workspace: 'ws-a' } },
  { groupBy: ['feature', 'customer_id'] },
  { groupBy: ['feature'], filters: { customer_id: 'acme' } },
  { groupBy: ['feature', 'model'] },
  { groupBy: ['customer_id', 'feature'], interval: 'hour' },
];

const big = (_: string, v: unknown) => (typeof v === 'bigint' ? String(v) : v);

/** Every row of the ranked statement, read `size` at a time. */
async function ranked(conn: ReadConnection, q: UsageQuery, size: number): Promise<UsageGroupRow[]> {
  const { plan, sql } = await rankedUsageSql(conn.dialect, conn.exec, q);
  const out: UsageGroupRow[] = [];
  for await (const rows of conn.pages(sql, size)) {
    expect(rows.length).to.be.at.most(size);
    out.push(...rows.map((r) => rankedRow(conn.dialect, plan, r)));
  }
  return out;
}

for (const backend of ['SQLite', 'PostgreSQL'] as const) {
  describe(`every group ranked by the database (${backend})`, function () {
    this.timeout(60_000);
    let store: UsageStore;
    let conn: ReadConnection;
    let dir: string | undefined;
    const schema = `tg_ranked_${process.pid}_${Date.now().toString(36)}`;

    before(async function () {
      if (backend === 'PostgreSQL') {
        const url = await requirePostgres(this, 'the ranked export on PostgreSQL');
        store = await openStore(url, { schema });
      } else {
        dir = mkdtempSync(join(tmpdir(), 'tollgate-ranked-'));
        store = await openStore(`sqlite:${join(dir, 'usage.db')}`);
      }
      await store.insertBatch(records());
      const source = store.readSource();
      if (source.kind === 'inline') throw new Error('a file or server store has a read source of its own');
      conn = openReadConnection(source, { timeoutMs: 30_000, exportsMax: 2 });
    });

    after(async () => {
      await conn?.close();
      await store?.close();
      if (backend === 'PostgreSQL' && conn) await dropPostgresSchema(schema);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    for (const shape of SHAPES) {
      it(`${JSON.stringify(shape)}: runUsageQuery's rows, in its order`, async () => {
        const q = { ...ragged, ...shape };
        const want = await store.queryUsage(q);
        expect(want.length, 'the shape has groups').to.be.greaterThan(0);
        const got = await ranked(conn, q, 7);
        const at = got.findIndex((r, i) => JSON.stringify(r, big) !== JSON.stringify(want[i], big));
        expect(at, `first difference: ${JSON.stringify([got[at], want[at]], big)}`).to.equal(-1);
        expect(got).to.deep.equal(want);
      });
    }

    it('covers every query path, ties broken by the group values, and a group past 2^63 pico', async () => {
      const paths = new Set(SHAPES.map((s) => planUsageQuery({ ...ragged, ...s }).path));
      expect([...paths].sort()).to.deep.equal(['raw', 'rollup', 'tag-rollup', 'tag-set']);
      const rows = await store.queryUsage({ ...ragged, groupBy: ['customer_id', 'model'] });
      const ties = rows.filter(
        (r, i) => i > 0 && r.costPico === rows[i - 1].costPico && r.requests === rows[i - 1].requests,
      );
      expect(ties.length).to.be.greaterThan(3);
      expect(rows[0].costPico > 2n ** 63n).to.equal(true);
    });

    it('a page size that divides the groups, an empty range, and a cancelled read', async () => {
      const q = { ...ragged, groupBy: ['customer_id', 'model'] };
      const want = await store.queryUsage(q);
      expect(await ranked(conn, q, want.length)).to.deep.equal(want);
      expect(await ranked(conn, { ...q, to: q.from }, 5)).to.deep.equal([]);
      // Stopped after its first page: the next read of the connection runs (its temporary table or cursor is gone).
      const { sql } = await rankedUsageSql(conn.dialect, conn.exec, q);
      for await (const rows of conn.pages(sql, 3)) {
        expect(rows).to.have.length(3);
        break;
      }
      expect(await ranked(conn, q, 50)).to.deep.equal(want);
    });
  });
}
