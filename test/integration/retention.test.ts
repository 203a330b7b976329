/**
 * Retention of usage records (storage.retention.records_days) on SQLite and on PostgreSQL (when DATABASE_URL is
 * set; required under CI=true): old records are deleted in batches through the store's maintenance, newer ones
 * stay, and the totals stay exact because the rollups are kept. On PostgreSQL the records table is partitioned by
 * month (migration 007) and whole months are dropped.
 *
 * Records go in through the store's own write path (insertBatch; on SQLite the writer thread), with old
 * timestamps. Every expected number is summed here from the records the test wrote, never read from the store.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { parseConfig } from '../../config/load';
import type { UsageRecord } from '../../records/usage-record';
import { openStore, UNTAGGED, type UsageGroupRow, type UsageQuery, type UsageStore } from '../../storage/index';
import { uncountedRanges } from '../../storage/query/coverage';
import { adminGet } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { olderSchemaSql, versionsFrom } from '../helpers/older-schema';
import { prng } from '../helpers/prng';
import { requirePostgres } from '../helpers/services';
import { usageRecord } from '../helpers/records';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const PG_URL = process.env.DATABASE_URL;

// ---------------------------------------------------------------- records and independent sums

const MODELS: [string, string][] = [
  ['openai', 'gpt-4o'],
  ['anthropic', 'claude-sonnet-4'],
  ['perplexity', 'sonar'],
];

/** `n` records spread over [from, to), ids `<prefix>-<i>`; about one in ten unpriced. */
function makeRecords(prefix: string, n: number, from: number, to: number, seed: number): UsageRecord[] {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  return Array.from({ length: n }, (_, i): UsageRecord => {
    const [provider, model] = pick(MODELS);
    const unpriced = rnd() < 0.1;
    const tags: Record<string, string> = {};
    if (rnd() < 0.7) tags.agent = pick(['planner', 'coder']);
    if (rnd() < 0.6) tags.customer_id = pick(['acme', 'globex']);
    return usageRecord({
      id: `${prefix}-${String(i).padStart(4, '0')}`,
      ts: from + Math.floor(rnd() * (to - from)),
      workspaceId: pick(['ws-a', 'ws-b']),
      keyId: 'key-1',
      provider,
      model,
      servedModel: model,
      streamed: rnd() < 0.5,
      inputTokens: Math.floor(rnd() * 10_000),
      outputTokens: Math.floor(rnd() * 2_000),
      searchContextSize: null,
      costPico: unpriced ? null : BigInt(Math.floor(rnd() * 1e9)) * 1000n + BigInt(i),
      provenance: unpriced ? 'unpriced' : 'measured',
      priceVersion: unpriced ? null : 'test',
      latencyMs: 100,
      ttfbMs: 50,
      tags,
    });
  });
}

interface Sum {
  requests: number;
  costPico: bigint;
  unknown: number;
  inputTokens: number;
}

/** Group key -> sums, over the records in [from, to) that match `keep`, grouped by `key` (and the UTC day when asked). */
function expectedSums(
  records: readonly UsageRecord[],
  q: UsageQuery,
  key: (r: UsageRecord) => unknown[] = () => [],
): Map<string, Sum> {
  const out = new Map<string, Sum>();
  for (const r of records) {
    if (r.ts < q.from || r.ts >= q.to) continue;
    if (
      Object.entries(q.filters ?? {}).some(
        ([k, v]) => (k === 'workspace' ? r.workspaceId : (r.tags[k] ?? UNTAGGED)) !== v,
      )
    )
      continue;
    const bucket = q.interval === 'day' ? r.ts - (r.ts % DAY) : q.interval === 'hour' ? r.ts - (r.ts % HOUR) : null;
    const k = JSON.stringify([bucket, ...key(r)]);
    const s = out.get(k) ?? { requests: 0, costPico: 0n, unknown: 0, inputTokens: 0 };
    s.requests++;
    s.costPico += r.costPico ?? 0n;
    s.unknown += r.costPico === null ? 1 : 0;
    s.inputTokens += r.inputTokens ?? 0;
    out.set(k, s);
  }
  return out;
}

function answerSums(rows: UsageGroupRow[], groupBy: string[]): Map<string, Sum> {
  return new Map(
    rows.map((r) => [
      JSON.stringify([r.bucket ?? null, ...groupBy.map((g) => r.group[g])]),
      { requests: r.requests, costPico: r.costPico, unknown: r.unknownCostCount, inputTokens: r.inputTokens },
    ]),
  );
}

const tag = (k: string) => (r: UsageRecord) => r.tags[k] ?? UNTAGGED;

/** The queries whose answers must not move when old records are deleted, each with its independent grouping. */
function exactQueries(from: number, to: number): { q: UsageQuery; key: (r: UsageRecord) => unknown[] }[] {
  return [
    { q: { from, to, groupBy: [] }, key: () => [] },
    { q: { from, to, groupBy: ['model'], interval: 'day' }, key: (r) => [r.servedModel] },
    { q: { from, to, groupBy: ['workspace', 'provider'] }, key: (r) => [r.workspaceId, r.provider] },
    { q: { from, to, groupBy: ['agent'] }, key: (r) => [tag('agent')(r)] },
    { q: { from, to, groupBy: ['agent'], filters: { workspace: 'ws-a' } }, key: (r) => [tag('agent')(r)] },
    // Two tag keys, no built-in: whole days from the tag-set rollup.
    { q: { from, to, groupBy: ['agent'], filters: { customer_id: 'acme' } }, key: (r) => [tag('agent')(r)] },
    {
      q: { from, to, groupBy: ['agent', 'customer_id'], interval: 'day' },
      key: (r) => [tag('agent')(r), tag('customer_id')(r)],
    },
  ];
}

async function expectExact(
  store: UsageStore,
  records: readonly UsageRecord[],
  from: number,
  to: number,
): Promise<void> {
  for (const { q, key } of exactQueries(from, to)) {
    expect(answerSums(await store.queryUsage(q), q.groupBy), JSON.stringify(q)).to.deep.equal(
      expectedSums(records, q, key),
    );
  }
}

// ---------------------------------------------------------------- the stores

interface Fixture {
  store: UsageStore;
  /** The first column of the first row, as a number, read on a connection of the test's own (`?` placeholders). */
  scalar(sql: string, ...params: unknown[]): Promise<number>;
  /** Runs SQL on the test's own connection. */
  raw(sql: string): Promise<void>;
  /** PostgreSQL: the store's schema. */
  schema?: string;
  close(): Promise<void>;
}

interface Backend {
  name: 'SQLite' | 'PostgreSQL';
  /** A fresh migrated store on a database of its own. */
  fresh(): Promise<Fixture>;
  /** storage: YAML for a gateway on a fresh database, and its cleanup. */
  gatewayStorage(): { yaml: string; open(): Promise<UsageStore>; cleanup(): Promise<void> };
}

const sqliteBackend: Backend = {
  name: 'SQLite',
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-'));
    const path = join(dir, 'usage.db');
    const store = await openStore(`sqlite:${path}`);
    let db: Database.Database | undefined;
    const conn = () => (db ??= new Database(path));
    return {
      store,
      scalar: async (sql, ...params) =>
        Number(
          conn()
            .prepare(sql)
            .pluck()
            .get(...params),
        ),
      raw: async (sql) => void conn().exec(sql),
      close: async () => {
        db?.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  gatewayStorage() {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-gw-'));
    const url = `sqlite:${join(dir, 'usage.db')}`;
    return {
      yaml: `url: "${url}"`,
      open: () => openStore(url),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

let schemas = 0;
const pgSchema = () => `tg_retention_${process.pid}_${Date.now().toString(36)}_${schemas++}`;
const pgSql = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
async function dropSchema(schema: string): Promise<void> {
  const c = new Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
}

const postgresBackend: Backend = {
  name: 'PostgreSQL',
  async fresh() {
    const schema = pgSchema();
    const store = await openStore(PG_URL as string, { schema });
    const c = new Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await c.connect();
    return {
      store,
      schema,
      scalar: async (sql, ...params) => Number(Object.values((await c.query(pgSql(sql), params)).rows[0])[0]),
      raw: async (sql) => void (await c.query(sql)),
      close: async () => {
        await c.end();
        await store.close();
        await dropSchema(schema);
      },
    };
  },
  gatewayStorage() {
    const schema = pgSchema();
    return {
      yaml: `url: "${PG_URL}"\n  schema: ${schema}`,
      open: () => openStore(PG_URL as string, { schema }),
      cleanup: () => dropSchema(schema),
    };
  },
};

const backends: Backend[] = [sqliteBackend];
if (PG_URL) backends.push(postgresBackend);
else
  describe('retention on PostgreSQL', () => {
    // Without DATABASE_URL: a loud SKIPPED line, or a failure under CI=true (helpers/services.ts).
    before(async function () {
      await requirePostgres(this, 'retention on PostgreSQL');
    });
    it('runs its suites once DATABASE_URL is set', () => expect(PG_URL).to.be.a('string'));
  });

// ---------------------------------------------------------------- the store's maintenance

/** Time of the scenario: 20 April 2025, 15:30 UTC, keeping 45 days: records before 6 March 00:00 UTC go. */
const NOW = Date.UTC(2025, 3, 20, 15, 30);
const CUTOFF = Date.UTC(2025, 2, 6);
/** Whole UTC days from 1 December 2024 to 21 April 2025: spans the cut-off, starts and ends on day boundaries. */
const RANGE = { from: Date.UTC(2024, 11, 1), to: Date.UTC(2025, 3, 21) };

/**
 * December has no partition on PostgreSQL (the maintenance never ran then): its records land in the DEFAULT
 * partition. January and February end before the cut-off; 35 records of March fall before it, 60 after.
 */
function scenario(): { old: UsageRecord[]; kept: UsageRecord[] } {
  const old = [
    ...makeRecords('dec', 7, Date.UTC(2024, 11, 1), Date.UTC(2025, 0, 1), 1),
    ...makeRecords('jan', 25, Date.UTC(2025, 0, 1), Date.UTC(2025, 1, 1), 2),
    ...makeRecords('feb', 25, Date.UTC(2025, 1, 1), Date.UTC(2025, 2, 1), 3),
    ...makeRecords('mar', 35, Date.UTC(2025, 2, 1), CUTOFF, 4),
  ];
  const kept = makeRecords('new', 60, CUTOFF, NOW, 5);
  return { old, kept };
}

for (const backend of backends)
  describe(`retention: ${backend.name} store`, function () {
    this.timeout(60_000);
    const open: Fixture[] = [];
    const fresh = async () => {
      const f = await backend.fresh();
      open.push(f);
      return f;
    };
    after(async () => {
      for (const f of open) await f.close();
    });

    it('deletes the records older than the cut-off, keeps the newer ones, and every total stays exact over the whole range', async () => {
      const { store, scalar } = await fresh();
      const { old, kept } = scenario();
      const all = [...old, ...kept];
      if (backend.name === 'PostgreSQL') {
        // The hourly job as it would have run in January and in March: this month's and the next month's partition.
        expect((await store.maintain({ now: Date.UTC(2025, 0, 10) })).createdPartitions).to.deep.equal([
          'usage_records_y2025m01',
          'usage_records_y2025m02',
        ]);
        expect((await store.maintain({ now: Date.UTC(2025, 2, 10) })).createdPartitions).to.deep.equal([
          'usage_records_y2025m03',
          'usage_records_y2025m04',
        ]);
      }
      for (let i = 0; i < all.length; i += 40)
        expect((await store.insertBatch(all.slice(i, i + 40))).duplicates).to.equal(0);
      if (backend.name === 'PostgreSQL') expect(await scalar('SELECT COUNT(*) FROM usage_records_default')).to.equal(7);
      await expectExact(store, all, RANGE.from, RANGE.to);
      expect(await store.recordsKeptFrom()).to.equal(null);

      const result = await store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 10, pauseMs: 0 } });

      if (backend.name === 'PostgreSQL') {
        // January and February whole; March's 35 old records in 4 statements (10, 10, 10, 5), December's 7 in one.
        expect(result.droppedPartitions).to.deep.equal(['usage_records_y2025m01', 'usage_records_y2025m02']);
        expect(result).to.include({ deleted: 35 + 7, deleteStatements: 4 + 1 });
        for (const name of ['usage_records_y2025m01', 'usage_records_y2025m02'])
          expect(await scalar(`SELECT COUNT(*) FROM pg_class WHERE relname = '${name}'`)).to.equal(0);
        expect(await scalar('SELECT COUNT(*) FROM usage_records_y2025m03')).to.equal(
          kept.filter((r) => r.ts < Date.UTC(2025, 3, 1)).length,
        );
        expect(await scalar('SELECT COUNT(*) FROM usage_records_default')).to.equal(0);
      } else {
        // 92 old records in statements of at most 10: nine full ones and one of 2.
        expect(result).to.include({ deleted: 92, deleteStatements: 10 });
        expect(result.droppedPartitions).to.deep.equal([]);
      }
      expect(await scalar('SELECT COUNT(*) FROM usage_records WHERE ts < ?', CUTOFF)).to.equal(0);
      expect(await scalar('SELECT COUNT(*) FROM usage_records')).to.equal(kept.length);
      const listed = await store.listRequests({ ...RANGE, limit: 1000 });
      expect(listed.records.map((r) => r.id).sort()).to.deep.equal(kept.map((r) => r.id).sort());
      expect((await store.listRequests({ from: RANGE.from, to: CUTOFF, limit: 10 })).records).to.deep.equal([]);
      expect(await store.recordsKeptFrom()).to.equal(CUTOFF);

      // The same numbers as before, over the whole range and over ranges on either side of the cut-off.
      await expectExact(store, all, RANGE.from, RANGE.to);
      await expectExact(store, all, Date.UTC(2025, 1, 3), Date.UTC(2025, 2, 20));
      await expectExact(store, all, RANGE.from, CUTOFF);
      for (const { q } of exactQueries(RANGE.from, RANGE.to))
        expect(uncountedRanges([q], CUTOFF), JSON.stringify(q)).to.deep.equal([]);

      // A second run finds nothing more to delete: one statement that deletes nothing (plus the DEFAULT partition's).
      const again = await store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 10, pauseMs: 0 } });
      expect(again).to.include({ deleted: 0, deleteStatements: backend.name === 'PostgreSQL' ? 2 : 1 });
    });

    it('says which part of a range only the deleted records could answer, and answers the rest exactly', async () => {
      const { store } = await fresh();
      const { old, kept } = scenario();
      const all = [...old, ...kept];
      for (let i = 0; i < all.length; i += 50) await store.insertBatch(all.slice(i, i + 50));
      await store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 1000, pauseMs: 0 } });

      // A range starting 20 minutes into an hour before the cut-off: that partial hour needed records.
      const ragged = { from: Date.UTC(2025, 1, 10, 7, 20), to: RANGE.to, groupBy: ['model'] };
      const wholeHour = Date.UTC(2025, 1, 10, 8);
      expect(uncountedRanges([ragged], CUTOFF)).to.deep.equal([{ from: ragged.from, to: wholeHour }]);
      expect(answerSums(await store.queryUsage(ragged), ['model'])).to.deep.equal(
        expectedSums(all, { ...ragged, from: wholeHour }, (r) => [r.servedModel]),
      );

      // Two tag keys with a built-in filter: no rollup holds that, so only the records from the cut-off on count.
      const raw = { ...RANGE, groupBy: ['agent', 'customer_id'], filters: { workspace: 'ws-a' } };
      expect(uncountedRanges([raw], CUTOFF)).to.deep.equal([{ from: RANGE.from, to: CUTOFF }]);
      expect(answerSums(await store.queryUsage(raw), raw.groupBy)).to.deep.equal(
        expectedSums(all, { ...raw, from: CUTOFF }, (r) => [tag('agent')(r), tag('customer_id')(r)]),
      );
      // The same query inside the kept window needs nothing deleted.
      expect(uncountedRanges([{ ...raw, from: CUTOFF + 3 * HOUR + 17 }], CUTOFF)).to.deep.equal([]);
    });

    it('deletes in batches of the configured size, with the writes of the gateway going in between', async () => {
      const { store, scalar } = await fresh();
      const at = Date.UTC(2025, 2, 1);
      const old = makeRecords('old', 35, at, at + DAY, 6);
      await store.insertBatch([...old, ...makeRecords('new', 5, at + 3 * DAY, at + 4 * DAY, 7)]);
      const before = at + 2 * DAY;

      // Counted from another connection while the run pauses 300 ms after each batch of 10: 35, 25, 15, 5, 0.
      const seen = new Set<number>();
      let done = false;
      const run = store
        .maintain({ now: at + 5 * DAY, retention: { before, batchSize: 10, pauseMs: 300 } })
        .finally(() => (done = true));
      let inserted: boolean | undefined;
      while (!done) {
        const n = await scalar('SELECT COUNT(*) FROM usage_records WHERE ts < ?', before);
        seen.add(n);
        // Once the first batch is gone, a write goes in during a pause, before the run ends.
        if (inserted === undefined && n < 35) {
          inserted = false;
          void store
            .insertBatch(makeRecords('during', 3, at + 3 * DAY, at + 4 * DAY, 8))
            .then(() => (inserted = !done));
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      const result = await run;
      // 10, 10, 10 and 5; on PostgreSQL in March's partition (which the run created, moving them out of the DEFAULT
      // partition), then one statement that finds nothing in the DEFAULT partition.
      expect(result).to.include({ deleted: 35, deleteStatements: backend.name === 'PostgreSQL' ? 4 + 1 : 4 });
      expect(
        [...seen].every((n) => [35, 25, 15, 5, 0].includes(n)),
        `counts seen: ${[...seen]}`,
      ).to.equal(true);
      expect(
        [...seen].some((n) => n === 25 || n === 15 || n === 5),
        `counts seen: ${[...seen]}`,
      ).to.equal(true);
      expect(inserted).to.equal(true);
      expect(await scalar('SELECT COUNT(*) FROM usage_records')).to.equal(5 + 3);
    });

    it('closing the store stops a run at its next batch', async () => {
      const f = await backend.fresh();
      const at = Date.UTC(2025, 2, 1);
      await f.store.insertBatch(makeRecords('old', 35, at, at + DAY, 17));
      const run = f.store.maintain({
        now: at + 5 * DAY,
        retention: { before: at + 2 * DAY, batchSize: 10, pauseMs: 300 },
      });
      // Closed during a pause after a batch. (On PostgreSQL the run first creates March's partition, moving the records
      // out of the DEFAULT one: a count running across that move may miss them, hence 0 is not taken as a batch.)
      let left = 35;
      for (const end = Date.now() + 5000; (left === 35 || left === 0) && Date.now() < end;)
        left = await f.scalar('SELECT COUNT(*) FROM usage_records');
      await f.close();
      const result = await run;
      expect(result).to.include({ skipped: 'closing' });
      expect(result.deleted)
        .to.equal(35 - left)
        .and.be.below(35);
    });

    it('a record written late, older than the cut-off, is counted in the totals and deleted at the next run', async () => {
      const { store } = await fresh();
      await store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 100, pauseMs: 0 } });
      const late = makeRecords('late', 4, Date.UTC(2025, 1, 1), Date.UTC(2025, 1, 2), 9);
      expect(await store.insertBatch(late)).to.deep.equal({ inserted: 4, duplicates: 0 });
      await expectExact(store, late, RANGE.from, RANGE.to);
      expect(await store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 100, pauseMs: 0 } })).to.include({
        deleted: 4,
      });
      await expectExact(store, late, RANGE.from, RANGE.to);
    });

    if (backend.name === 'PostgreSQL') {
      it('migration 007 turns the plain records table into month partitions with every record kept', async () => {
        const { store, scalar, raw, schema } = await fresh();
        const records = [
          ...makeRecords('m1', 30, Date.UTC(2025, 4, 1), Date.UTC(2025, 5, 1), 10),
          ...makeRecords('m3', 20, Date.UTC(2025, 6, 1), Date.UTC(2025, 7, 1), 11),
        ];
        await store.insertBatch(records);
        await raw(olderSchemaSql('postgres', 6));
        expect(
          await scalar("SELECT COUNT(*) FROM pg_partitioned_table WHERE partrelid = 'usage_records'::regclass"),
        ).to.equal(0);
        expect((await store.migrate()).applied).to.deep.equal(versionsFrom(7));

        expect(
          await scalar("SELECT COUNT(*) FROM pg_partitioned_table WHERE partrelid = 'usage_records'::regclass"),
        ).to.equal(1);
        const now = new Date();
        const month = (y: number, m: number) => {
          const d = new Date(Date.UTC(y, m, 1));
          return `usage_records_y${d.getUTCFullYear()}m${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
        };
        const c = new Client({ connectionString: PG_URL });
        await c.connect();
        const names = (
          await c.query(
            `SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = '${schema}.usage_records'::regclass ORDER BY 1`,
          )
        ).rows.map((r) => r.relname as string);
        await c.end();
        // The months with records (May and July, not June), this month and the next, and the DEFAULT partition.
        const expected = new Set([
          'usage_records_y2025m05',
          'usage_records_y2025m07',
          month(now.getUTCFullYear(), now.getUTCMonth()),
          month(now.getUTCFullYear(), now.getUTCMonth() + 1),
          'usage_records_default',
        ]);
        expect(names).to.deep.equal([...expected].sort());
        expect(await scalar('SELECT COUNT(*) FROM usage_records_y2025m05')).to.equal(30);
        expect(await scalar('SELECT COUNT(*) FROM usage_records_y2025m07')).to.equal(20);
        await expectExact(store, records, Date.UTC(2025, 4, 1), Date.UTC(2025, 7, 1));
        const page = await store.listRequests({ from: Date.UTC(2025, 4, 1), to: Date.UTC(2025, 7, 1), limit: 1000 });
        // The columns of migrations 008, 012 and 017 came back empty (the schema was taken back to before 007): compare
        // the rest.
        const before008 = (r: UsageRecord) => {
          const { usageSource: _s, providerCostPico: _p, costDisagrees: _d, toolCalls: _t, priceId: _i, ...rest } = r;
          const {
            serviceTier: _v,
            inputAudioTokens: _a,
            outputAudioTokens: _o,
            generationId: _g,
            upstreamMs: _u,
            listCostPico: _l,
            ...kept
          } = rest;
          return kept;
        };
        expect(page.records.map(before008)).to.deep.equal(
          [...records].sort((a, b) => b.ts - a.ts || (a.id < b.id ? 1 : -1)).map(before008),
        );
        // Inserts stay idempotent on the new primary key (id, ts), repricing finds the records by it.
        expect(await store.insertBatch(records.slice(0, 10))).to.deep.equal({ inserted: 0, duplicates: 10 });
        const repriced = await store.repriceAll((r) =>
          r.costPico === null ? { costPico: 7_000_000n, provenance: 'measured', priceVersion: 'v2' } : undefined,
        );
        const unpriced = records.filter((r) => r.costPico === null);
        expect(repriced.updated).to.equal(unpriced.length);
        const after = records.map((r) => (r.costPico === null ? { ...r, costPico: 7_000_000n } : r));
        await expectExact(store, after, Date.UTC(2025, 4, 1), Date.UTC(2025, 7, 1));
      });

      it("creates this month's and the next month's partition ahead, moving their records out of the DEFAULT partition", async () => {
        const { store, scalar } = await fresh();
        // A month nothing was prepared for: its records wait in the DEFAULT partition.
        const records = makeRecords('sep', 12, Date.UTC(2025, 8, 1), Date.UTC(2025, 9, 1), 12);
        await store.insertBatch(records);
        expect(await scalar('SELECT COUNT(*) FROM usage_records_default')).to.equal(12);
        const result = await store.maintain({ now: Date.UTC(2025, 8, 15) });
        expect(result.createdPartitions).to.deep.equal(['usage_records_y2025m09', 'usage_records_y2025m10']);
        expect(await scalar('SELECT COUNT(*) FROM usage_records_default')).to.equal(0);
        expect(await scalar('SELECT COUNT(*) FROM usage_records_y2025m09')).to.equal(12);
        await expectExact(store, records, Date.UTC(2025, 8, 1), Date.UTC(2025, 9, 1));
        // Already there: nothing created the second time; an insert goes straight to its month.
        expect((await store.maintain({ now: Date.UTC(2025, 8, 20) })).createdPartitions).to.deep.equal([]);
        await store.insertBatch(makeRecords('oct', 3, Date.UTC(2025, 9, 1), Date.UTC(2025, 9, 2), 13));
        expect(await scalar('SELECT COUNT(*) FROM usage_records_y2025m10')).to.equal(3);
      });

      it('a partition drop waiting behind a long query gives up within a second, lets inserts through, and succeeds later', async () => {
        const { store, schema } = await fresh();
        await store.maintain({ now: Date.UTC(2025, 0, 10) }); // January's and February's partitions
        await store.insertBatch(makeRecords('jan', 10, Date.UTC(2025, 0, 1), Date.UTC(2025, 0, 31), 15));
        // A long report holds its read lock on usage_records for 3 s.
        const reader = new Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
        await reader.connect();
        await reader.query('BEGIN');
        await reader.query('SELECT COUNT(*) FROM usage_records');
        const t0 = performance.now();
        const released = new Promise<number>((resolve) =>
          setTimeout(async () => {
            await reader.query('COMMIT');
            await reader.end();
            resolve(performance.now() - t0);
          }, 3000),
        );
        const run = store.maintain({
          now: NOW,
          retention: { before: Date.UTC(2025, 1, 1), batchSize: 100, pauseMs: 0 },
        });
        await new Promise((r) => setTimeout(r, 300));
        // Queued behind the waiting drop, an insert goes in when the drop's lock wait gives up, not when the report ends.
        await store.insertBatch(makeRecords('feb', 5, Date.UTC(2025, 1, 1), Date.UTC(2025, 1, 2), 16));
        const inserted = performance.now() - t0;
        const result = await run;
        const releasedAt = await released;
        expect(inserted).to.be.below(releasedAt);
        expect(result.droppedPartitions).to.deep.equal(['usage_records_y2025m01']);
        expect(
          await store.listRequests({ from: Date.UTC(2025, 0, 1), to: Date.UTC(2025, 2, 1), limit: 100 }),
        ).to.have.nested.property('records.length', 5);
      });

      it('one instance at a time: a second store on the same database skips its run while the first holds the lock', async () => {
        const { store, schema } = await fresh();
        const other = await openStore(PG_URL as string, { schema });
        try {
          await store.insertBatch(makeRecords('lock', 30, Date.UTC(2025, 1, 1), Date.UTC(2025, 1, 2), 14));
          const first = store.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 10, pauseMs: 300 } });
          await new Promise((r) => setTimeout(r, 150));
          expect(
            await other.maintain({ now: NOW, retention: { before: CUTOFF, batchSize: 10, pauseMs: 0 } }),
          ).to.include({ skipped: 'locked', deleted: 0 });
          expect(await first).to.include({ deleted: 30 });
        } finally {
          await other.close();
        }
      });
    }
  });

// ---------------------------------------------------------------- the gateway's job and the admin API

for (const backend of backends)
  describe(`retention in a running gateway: ${backend.name}`, function () {
    this.timeout(60_000);
    const storage = backend.gatewayStorage();
    let gw: TestGateway | undefined;
    const now = Date.now();
    const today = now - (now % DAY);
    const cutoff = today - 30 * DAY;
    const from = today - 70 * DAY;
    const to = today + DAY;
    // Old: 32 to 69 days back (before the cut-off whatever the hour); kept: the last 29 days.
    const old = makeRecords('gw-old', 53, today - 69 * DAY, today - 32 * DAY, 21);
    const kept = makeRecords('gw-new', 40, today - 29 * DAY, now - HOUR, 22);
    const all = [...old, ...kept];

    before(async () => {
      const store = await storage.open();
      await store.insertBatch(all);
      await store.close();
      gw = await startTestGateway(
        'http://127.0.0.1:9',
        `storage:\n  ${storage.yaml}\n  retention: { records_days: 30, batch_size: 10, pause_ms: 0 }\n`,
      );
    });
    after(async () => {
      await gw?.stop();
      await storage.cleanup();
    });

    const logLine = async (): Promise<Record<string, unknown>> => {
      for (let i = 0; i < 500; i++) {
        const line = gw!.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'storage maintenance');
        if (line) return line;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('no "storage maintenance" log line');
    };

    it('runs at start, deleting the old records in batches (one log line says how many)', async () => {
      const line = await logLine();
      // 53 records: five statements of 10 and one of 3 (on PostgreSQL all in the DEFAULT partition: their months were
      // never prepared, and no month partition reaches back to the cut-off).
      const batches = Math.floor(old.length / 10) + 1;
      expect(line).to.include({
        deleted: old.length,
        deleteStatements: batches,
        recordsKeptFrom: new Date(cutoff).toISOString(),
      });
      const info = await adminGet(gw!, '/api/info');
      expect(info.records_kept_from).to.equal(new Date(cutoff).toISOString());
    });

    it("the admin API's totals over a range spanning the cut-off are those of every record ever written", async () => {
      await logLine();
      const usage = await adminGet(gw!, `/api/usage?from=${from}&to=${to}&group_by=model`);
      const total = expectedSums(all, { from, to, groupBy: [] }).get(JSON.stringify([null]))!;
      expect(usage.total).to.include({
        requests: total.requests,
        input_tokens: total.inputTokens,
        unpriced_count: total.unknown,
        cost_pico: String(total.costPico),
      });
      const byModel = expectedSums(all, { from, to, groupBy: ['model'] }, (r) => [r.servedModel]);
      expect(new Map(usage.rows.map((r: any) => [JSON.stringify([null, r.group.model]), r.cost_pico]))).to.deep.equal(
        new Map([...byModel].map(([k, s]) => [k, String(s.costPico)])),
      );
      expect(usage).to.include({ records_kept_from: new Date(cutoff).toISOString() });
      expect(usage.uncounted).to.deep.equal([]);

      // The dashboard's chart: daily series whose total adds up to the same.
      const series = await adminGet(gw!, `/api/usage/series?from=${from}&to=${to}&group_by=agent&interval=day`);
      expect(series.total.cost_pico.reduce((a: bigint, c: string) => a + BigInt(c), 0n)).to.equal(total.costPico);
      expect(series.total.requests.reduce((a: number, n: number) => a + n, 0)).to.equal(total.requests);
      expect(series.uncounted).to.deep.equal([]);
    });

    it('names the part of a range it could not count, and lists no record older than the cut-off', async () => {
      await logLine();
      const ragged = from + 20 * 60_000;
      const usage = await adminGet(gw!, `/api/usage?from=${ragged}&to=${to}`);
      expect(usage.uncounted).to.deep.equal([
        { from: new Date(ragged).toISOString(), to: new Date(from + HOUR).toISOString() },
      ]);
      const raw = await adminGet(
        gw!,
        `/api/usage?from=${from}&to=${to}&group_by=agent,customer_id&filter[workspace]=ws-a`,
      );
      expect(raw.uncounted).to.deep.equal([{ from: new Date(from).toISOString(), to: new Date(cutoff).toISOString() }]);

      expect((await adminGet(gw!, `/api/requests?from=${from}&to=${cutoff}`)).data).to.deep.equal([]);
      const listed = await adminGet(gw!, `/api/requests?from=${from}&to=${to}&limit=1000`);
      expect(listed.data.map((r: any) => r.id).sort()).to.deep.equal(kept.map((r) => r.id).sort());
    });
  });

// ---------------------------------------------------------------- the setting

describe('storage.retention settings', () => {
  const budget = (tags: string) =>
    `workspaces: [{ id: a, limits: { budgets: [{ period: month, usd: "5", ${tags} }] } }]\n`;

  it('is off by default, with bounded batches and a pause between them', () => {
    const c = parseConfig('{}', {});
    expect(c.storage.retention.records_days).to.equal(undefined);
    expect(c.storage.retention.batch_size).to.be.within(1, 100_000);
    expect(c.storage.retention.pause_ms).to.be.greaterThan(0);
    expect(
      parseConfig('storage: { retention: { records_days: 7, batch_size: 10, pause_ms: 0 } }', {}).storage.retention,
    ).to.deep.equal({ records_days: 7, batch_size: 10, pause_ms: 0 });
    expect(() => parseConfig('storage: { retention: { records_days: 0 } }', {})).to.throw(/records_days/);
  });

  it("refuses fewer than 30 days when a monthly budget counts two tag keys (read from the month's records)", () => {
    expect(() =>
      parseConfig(
        `storage: { retention: { records_days: 29 } }\n${budget('tag: { agent: bot, customer_id: acme }')}`,
        {},
      ),
    ).to.throw(/storage\.retention\.records_days: workspace a has a monthly budget on agent and customer_id/);
    expect(
      parseConfig(
        `storage: { retention: { records_days: 30 } }\n${budget('tag: { agent: bot, customer_id: acme }')}`,
        {},
      ).storage.retention.records_days,
    ).to.equal(30);
    // One tag key (or per_tag) is read from the rollups: any retention will do.
    expect(
      parseConfig(`storage: { retention: { records_days: 2 } }\n${budget('per_tag: customer_id')}`, {}).storage
        .retention.records_days,
    ).to.equal(2);
    expect(
      parseConfig(`storage: { retention: { records_days: 2 } }\n${budget('tag: { agent: bot }')}`, {}).storage.retention
        .records_days,
    ).to.equal(2);
  });
});
