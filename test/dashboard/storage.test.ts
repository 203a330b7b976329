/**
 * Storage added for the dashboard, on SQLite and PostgreSQL (DATABASE_URL; helpers/services.ts when it is unset):
 * the tag-key list (listTagKeys), the daily and monthly rollups and the tag-set rollup (answers equal to the hourly
 * rollups, or to the raw records for two or more tag keys, also after repricing), their backfill by migrations 002,
 * 004, 005 and 023,
 * and tag-driven request listing.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { UsageRecord } from '../../records/usage-record';
import { openStore, planUsageQuery, type UsageQuery, type UsageStore } from '../../storage';
import { olderSchemaSql, undo008Sql, versionsFrom } from '../helpers/older-schema';
import { requirePostgres } from '../helpers/services';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const BASE = Date.UTC(2026, 0, 5);

function records(n: number): UsageRecord[] {
  const out: UsageRecord[] = [];
  for (let i = 0; i < n; i++) {
    const tags: Record<string, string> = { agent: ['bot', 'writer', 'coder'][i % 3], customer_id: `c${(i * 7) % 13}` };
    if (i % 4 === 0) tags.feature = ['chat', 'search'][i % 2];
    if (i % 10 === 0) tags['zz.rare-key'] = 'x';
    out.push(
      usageRecord({
        id: `d-${String(i).padStart(5, '0')}`,
        ts: BASE + Math.floor((i * 7919) % (6 * DAY)) + (i % 997),
        workspaceId: i % 2 ? 'w1' : 'w2',
        keyId: 'k',
        provider: i % 3 ? 'openai' : 'anthropic',
        model: i % 3 ? 'gpt-4o' : 'claude-sonnet-4-5',
        servedModel: i % 3 ? 'gpt-4o' : 'claude-sonnet-4-5',
        status: i % 17 ? 200 : 500,
        inputTokens: 100 + i,
        outputTokens: 10 + (i % 50),
        ...ZERO_BUCKETS,
        // A few huge amounts: one day's total exceeds 2^63 pico-USD (the daily rows split money in two columns).
        costPico: i % 11 === 0 ? null : i >= 1 && i <= 3 ? 4_000_000_000_000_000_000n : BigInt(1_000_000 + i * 1000),
        provenance: i % 11 === 0 ? 'unpriced' : i % 5 === 0 ? 'estimated' : 'measured',
        priceVersion: 'v',
        latencyMs: 10,
        ttfbMs: 5,
        tags,
      }),
    );
  }
  return out;
}

const QUERIES: UsageQuery[] = [
  { from: BASE, to: BASE + 6 * DAY, groupBy: [] },
  { from: BASE, to: BASE + 6 * DAY, groupBy: ['customer_id'] },
  { from: BASE - DAY, to: BASE + 7 * DAY, groupBy: ['feature'], interval: 'day' },
  { from: BASE + 5 * HOUR + 17, to: BASE + 5 * DAY + 3 * HOUR + 1, groupBy: ['agent'] },
  {
    from: BASE + 5 * HOUR,
    to: BASE + 4 * DAY + 3 * HOUR,
    groupBy: [],
    interval: 'day',
    filters: { customer_id: 'c3' },
  },
  { from: BASE, to: BASE + 6 * DAY, groupBy: ['agent'], filters: { feature: '(untagged)' } },
  // Two or more tag keys: the tag-set rollup for whole days, raw records for the partial ones.
  { from: BASE, to: BASE + 6 * DAY, groupBy: ['customer_id'], filters: { agent: 'bot' } },
  { from: BASE + 7 * HOUR + 5, to: BASE + 5 * DAY + 1, groupBy: ['feature', 'agent'], interval: 'day' },
  {
    from: BASE - DAY,
    to: BASE + 4 * DAY + 13 * HOUR,
    groupBy: ['zz.rare-key'],
    filters: { customer_id: 'c3', agent: 'writer' },
  },
  { from: BASE, to: BASE + 6 * DAY, groupBy: [], filters: { feature: 'chat', customer_id: '(untagged)' } },
  // Built-ins over whole days: usage_dims_rollup_daily.
  { from: BASE, to: BASE + 6 * DAY, groupBy: ['model', 'status'] },
  {
    from: BASE - DAY,
    to: BASE + 7 * DAY + 5 * HOUR,
    groupBy: ['provider'],
    interval: 'day',
    filters: { status: '500' },
  },
  // A tag over whole months: usage_tag_rollup_monthly, whole (January), minus the days left out (January 7 on, from
  // which the days of January 5 and 6 are subtracted), and with days of December.
  { from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 1, 1), groupBy: ['customer_id'] },
  { from: Date.UTC(2026, 0, 7), to: Date.UTC(2026, 1, 1), groupBy: ['customer_id'] },
  { from: Date.UTC(2025, 11, 20), to: Date.UTC(2026, 0, 25), groupBy: ['agent'], filters: { feature: '(untagged)' } },
];

/**
 * The same query forced off the daily and monthly tables, onto the hourly rollups or (two or more tag keys) the raw
 * records: its range cut at every half day, so that no part holds a whole UTC day.
 */
function hourlyOnly(q: UsageQuery): UsageQuery[] {
  const cuts = [q.from];
  for (let t = Math.floor(q.from / (DAY / 2)) * (DAY / 2) + DAY / 2; t < q.to; t += DAY / 2) cuts.push(t);
  return cuts.map((from, i) => ({ ...q, from, to: cuts[i + 1] ?? q.to }));
}

async function viaHourly(store: UsageStore, q: UsageQuery): Promise<Map<string, string>> {
  const sum = new Map<string, { requests: number; cost: bigint; unpriced: number; input: number }>();
  for (const part of hourlyOnly(q)) {
    expect(planUsageQuery(part).segments.some((s) => s.path === 'daily' || s.path === 'tag-set')).to.equal(false);
    for (const r of await store.queryUsage(part)) {
      const k = JSON.stringify([r.bucket ?? null, r.group]);
      const e = sum.get(k) ?? { requests: 0, cost: 0n, unpriced: 0, input: 0 };
      e.requests += r.requests;
      e.cost += r.costPico;
      e.unpriced += r.unknownCostCount;
      e.input += r.inputTokens;
      sum.set(k, e);
    }
  }
  return new Map([...sum].map(([k, e]) => [k, `${e.requests}/${e.cost}/${e.unpriced}/${e.input}`]));
}

/**
 * The same query answered from the records themselves: an hourly series filtered on two tag keys no record has
 * ("(untagged)" matches every record) reads the raw path; its hours are summed into the query's buckets.
 */
async function viaRecords(store: UsageStore, q: UsageQuery): Promise<Map<string, string>> {
  const raw = {
    ...q,
    interval: 'hour' as const,
    filters: { ...q.filters, 'zz.absent': '(untagged)', 'zz.absent2': '(untagged)' },
  };
  expect(planUsageQuery(raw).path).to.equal('raw');
  const sum = new Map<string, bigint[]>();
  for (const r of await store.queryUsage(raw)) {
    const bucket = q.interval === 'day' ? Math.floor((r.bucket as number) / DAY) * DAY : null;
    const k = JSON.stringify([bucket, r.group]);
    const e = sum.get(k) ?? [0n, 0n, 0n, 0n];
    [r.requests, r.costPico, r.unknownCostCount, r.inputTokens].forEach((v, i) => (e[i] += BigInt(v)));
    sum.set(k, e);
  }
  return new Map([...sum].map(([k, e]) => [k, e.join('/')]));
}

async function viaDaily(store: UsageStore, q: UsageQuery): Promise<Map<string, string>> {
  if (q.interval !== 'hour' && q.to - q.from >= 2 * DAY && planUsageQuery(q).path !== 'raw') {
    expect(
      planUsageQuery(q).segments.some((s) => s.path === 'daily' || s.path === 'tag-set'),
      JSON.stringify(q),
    ).to.equal(true);
  }
  const rows = await store.queryUsage(q);
  return new Map(
    rows.map((r) => [
      JSON.stringify([r.bucket ?? null, r.group]),
      `${r.requests}/${r.costPico}/${r.unknownCostCount}/${r.inputTokens}`,
    ]),
  );
}

/** `open` runs in the suite's first hook, with its context (to skip or fail when the store's service is missing). */
function suite(
  name: string,
  open: (ctx: Mocha.Context) => Promise<UsageStore>,
  raw: (store: UsageStore, sql: string) => Promise<void>,
  cleanup: () => Promise<void>,
): void {
  describe(`dashboard storage: ${name}`, function () {
    this.timeout(60_000);
    let store: UsageStore;
    const data = records(1500);
    before(async function () {
      store = await open(this);
    });
    after(async () => {
      await store?.close();
      await cleanup();
    });

    it('lists no tag key in an empty store, then every tag key in the data, sorted', async () => {
      expect(await store.listTagKeys()).to.deep.equal([]);
      for (let i = 0; i < data.length; i += 500) await store.insertBatch(data.slice(i, i + 500));
      expect(await store.listTagKeys()).to.deep.equal(['agent', 'customer_id', 'feature', 'zz.rare-key']);
    });

    it('answers whole days from the daily rollups with the same numbers as the hourly rollups (money beyond 2^63)', async () => {
      const [total] = await store.queryUsage(QUERIES[0]);
      expect(total.costPico > 2n ** 63n).to.equal(true);
      for (const q of QUERIES) {
        const daily = await viaDaily(store, q);
        expect(daily, JSON.stringify(q)).to.deep.equal(await viaHourly(store, q));
        expect(daily, `${JSON.stringify(q)}, from the records`).to.deep.equal(await viaRecords(store, q));
      }
    });

    it('keeps the daily rollups right through repricing', async () => {
      const result = await store.repriceAll((r) =>
        r.provenance === 'unpriced' ? { costPico: 5_000_000n, provenance: 'measured', priceVersion: 'v2' } : undefined,
      );
      expect(result.updated).to.be.greaterThan(0);
      for (const q of QUERIES)
        expect(await viaDaily(store, q), JSON.stringify(q)).to.deep.equal(await viaHourly(store, q));
    });

    it('migration 023 fills the daily rollup per built-in and the monthly one per tag value from the older rollups', async () => {
      const before = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      await raw(
        store,
        'DROP TABLE usage_dims_rollup_daily; DROP TABLE usage_tag_rollup_monthly; DROP INDEX usage_tag_rollup_daily_value; DELETE FROM schema_migrations WHERE version = 23',
      );
      expect((await store.migrate()).applied).to.deep.equal([23]);
      const after = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      expect(after).to.deep.equal(before);
    });

    it('migration 002 fills the daily rollups from the hourly ones', async () => {
      const before = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      await raw(
        store,
        'DROP TABLE usage_rollup_daily; DROP TABLE usage_tag_rollup_daily; DELETE FROM schema_migrations WHERE version = 2',
      );
      await raw(store, undo008Sql(['usage_rollup_daily', 'usage_tag_rollup_daily']));
      const migrated = await store.migrate();
      expect(migrated.applied).to.deep.equal([2, ...versionsFrom(8)]);
      const after = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      expect(after).to.deep.equal(before);
    });

    it("migrations 004 and 005 fill the tag-set rollup and the records' sets from the stored records (money beyond 2^63 per day kept exact)", async () => {
      const before = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      await raw(store, olderSchemaSql(store.dialect, 3));
      expect((await store.migrate()).applied).to.deep.equal(versionsFrom(4));
      const after = await Promise.all(QUERIES.map((q) => viaDaily(store, q)));
      expect(after).to.deep.equal(before);
      for (const q of QUERIES)
        expect(after[QUERIES.indexOf(q)], JSON.stringify(q)).to.deep.equal(await viaHourly(store, q));
    });

    it('lists requests filtered by tags newest first, paged, through the tag sets', async () => {
      const q = { from: BASE, to: BASE + 6 * DAY, filters: { customer_id: 'c3', agent: 'bot' }, limit: 7 };
      const expected = data
        .filter((r) => r.tags.customer_id === 'c3' && r.tags.agent === 'bot')
        .sort((a, b) => b.ts - a.ts || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await store.listRequests({ ...q, cursor });
        seen.push(...page.records.map((r) => r.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).to.deep.equal(expected);
    });
  });
}

let dir: string | undefined;
suite(
  'SQLite',
  () => openStore(`sqlite:${join((dir = mkdtempSync(join(tmpdir(), 'tollgate-dash-'))), 'usage.db')}`),
  async (_store, sql) => {
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(join(dir!, 'usage.db'));
    db.exec(sql);
    db.close();
  },
  async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
);

const schema = `tollgate_dash_${process.pid}_${Date.now().toString(36)}`;
let pgUrl: string | undefined;
suite(
  'PostgreSQL',
  async (ctx) => {
    pgUrl = await requirePostgres(ctx, 'dashboard storage on PostgreSQL');
    return openStore(pgUrl, { schema });
  },
  async (_store, sql) => {
    const c = new Client({ connectionString: pgUrl, options: `-c search_path=${schema}` });
    await c.connect();
    await c.query(sql);
    await c.end();
  },
  async () => {
    if (!pgUrl) return;
    const c = new Client({ connectionString: pgUrl });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  },
);
