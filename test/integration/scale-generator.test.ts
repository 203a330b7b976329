/**
 * The big-store generator (bench/scale.ts) at 100,000 records, so that it does not rot: what it writes on each
 * store equals what the gateway's own write path (UsageStore.insertBatch) stores for the same records, every
 * record column, tag set and rollup row compared (bench/scale/check.ts). The big runs are benchmarks, never here.
 */
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { checkAgainstWritePath, compareStores, type Rows } from '../../bench/scale/check';
import { generatePostgres } from '../../bench/scale/postgres';
import { generateSqlite } from '../../bench/scale/sqlite';
import { openStore } from '../../storage';
import { postgresDialect } from '../../storage/dialect';
import type { SqlQuery } from '../../storage/query/sql';
import { listPage } from '../../storage/query/list';
import { runUsageQuery, type Exec } from '../../storage/query/run';
import { monthStart } from '../../storage/postgres-partitions';
import type { UsageGroupRow, UsageQuery, UsageStore } from '../../storage/store';
import { CUSTOMER_NAMES } from '../../bench/scale/mix';
import { requirePostgres } from '../helpers/services';

const RECORDS = 100_000;
const DAYS = 30;
const DAY = 86_400_000;
const END = Math.floor(Date.now() / DAY) * DAY;
const FROM = END - DAYS * DAY;

function sqliteRows(path: string): { rows: Rows; close: () => void } {
  const db = new Database(path, { readonly: true });
  db.defaultSafeIntegers(true);
  return { rows: async (sql) => db.prepare(sql).all() as Record<string, unknown>[], close: () => db.close() };
}

/**
 * The statements of the reads that must stay bounded as records grow (the requests list paged deep by keyset, a
 * tag filter), captured from the store's own query code and explained on the generated store: the records'
 * partitions are read through an index, never scanned whole. Sequential scans are disabled for the EXPLAIN, so
 * that the check asks whether an index plan exists at all, not what the planner prefers on 100,000 rows.
 */
async function recordScans(c: Client): Promise<[string, string[]][]> {
  const statements: [string, SqlQuery][] = [];
  const capture =
    (label: string): Exec =>
    async (q) => {
      statements.push([label, q]);
      return (await c.query(q.sql, q.params as unknown[])).rows;
    };
  const year = { from: FROM, to: END };
  let page = await listPage(postgresDialect, capture('requests page 1'), { ...year, limit: 50 });
  for (let i = 0; i < 20 && page.nextCursor; i++)
    page = await listPage(postgresDialect, capture('requests deep page'), {
      ...year,
      limit: 50,
      cursor: page.nextCursor,
    });
  const tail = { customer_id: 'customer-1987' };
  await listPage(postgresDialect, capture('requests where customer_id'), { ...year, limit: 50, filters: tail });
  const out = new Map<string, string[]>();
  await c.query('SET enable_seqscan = off');
  try {
    for (const [label, q] of statements) {
      const plan = JSON.stringify((await c.query(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.params as unknown[])).rows);
      const scans = [...plan.matchAll(/"Node Type":"Seq Scan"[^}]*?"Relation Name":"(usage_records[^"]*)"/g)];
      out.set(label, [...(out.get(label) ?? []), ...scans.map((m) => m[1])]);
    }
  } finally {
    await c.query('RESET enable_seqscan');
  }
  expect([...out.keys()]).to.deep.equal(['requests page 1', 'requests deep page', 'requests where customer_id']);
  return [...out];
}

/**
 * A grouping on two tag keys over ranges that read usage_tag_set_monthly (storage/query/tag-set-totals.ts) gives
 * what the sum of the same grouping over each day of its records gives, each day read from usage_tag_set_daily
 * alone: up to the next month's start (the current month's row whole), and up to END (the current month's row
 * minus the days after END). Closes `store`.
 */
async function expectMonthsAgreeWithDays(store: UsageStore): Promise<void> {
  type Count = readonly [group: string, requests: number, cost: string];
  const counts = (rows: UsageGroupRow[]): Count[] =>
    rows
      .map((r) => [JSON.stringify(r.group), r.requests, String(r.costPico)] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const ask = async (from: number, to: number) =>
    counts(await store.queryUsage({ from, to, groupBy: ['agent', 'feature'] }));
  try {
    const sum = new Map<string, [number, bigint]>();
    for (let day = FROM; day < END; day += DAY)
      for (const [k, n, cost] of await ask(day, day + DAY)) {
        const [m, c] = sum.get(k) ?? [0, 0n];
        sum.set(k, [m + n, c + BigInt(cost)]);
      }
    const byGroup = (a: Count, b: Count) => (a[0] < b[0] ? -1 : 1);
    const days = [...sum].map(([k, [n, cost]]): Count => [k, n, String(cost)]).sort(byGroup);
    expect(days.reduce((n, r) => n + r[1], 0)).to.equal(RECORDS);
    expect(await ask(FROM, monthStart(END, 1))).to.deep.equal(days);
    expect(await ask(FROM, END)).to.deep.equal(days);
  } finally {
    await store.close();
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Group Key'?: string[];
  Strategy?: string;
  Plans?: PlanNode[];
}

/** The chain of plan nodes from the root down to each scan of `relation`. */
function pathsTo(node: PlanNode, relation: string, above: PlanNode[] = []): PlanNode[][] {
  const here = [...above, node];
  const found = node['Relation Name'] === relation ? [here] : [];
  return [...found, ...(node.Plans ?? []).flatMap((p) => pathsTo(p, relation, here))];
}

/**
 * A grouping on two tag keys with no tag value to pick sets by (storage/query/tag-set-totals.ts, tagSetGroupsSql),
 * explained on the generated store: for each scan of `relation` (the daily or the monthly tag-set rollup), whether a
 * sort lies between it and the root (its rows sorted to be grouped, or to be joined), the strategy and key of the
 * aggregate at the root (its rows hashed into their groups), and the indexes read for it. Sequential scans are off,
 * as above: the question is whether the plan exists.
 */
async function tagSetPlan(
  c: Client,
  from: number,
  to: number,
  relation = 'usage_tag_set_daily',
): Promise<{ sorted: boolean[]; root: string; indexes: string[] }> {
  const statements: SqlQuery[] = [];
  await runUsageQuery(postgresDialect, async (q) => (statements.push(q), []), {
    from,
    to,
    groupBy: ['agent', 'feature'],
  });
  expect(statements).to.have.length(1);
  await c.query('SET enable_seqscan = off');
  try {
    const [q] = statements;
    const [
      {
        'QUERY PLAN': [{ Plan: plan }],
      },
    ] = (await c.query(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.params as unknown[])).rows as {
      'QUERY PLAN': { Plan: PlanNode }[];
    }[];
    const paths = pathsTo(plan, relation);
    const sorted = paths.map((path) => path.some((n) => n['Node Type'] === 'Sort'));
    const indexes = paths.flatMap((path) => {
      const scan = path[path.length - 1];
      return [scan, ...(scan.Plans ?? [])].flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []));
    });
    const root = `${plan['Node Type']} ${plan.Strategy ?? ''} by ${(plan['Group Key'] ?? []).join(', ')}`;
    return { sorted, root, indexes };
  } finally {
    await c.query('RESET enable_seqscan');
  }
}

/**
 * The tables and indexes each statement of a usage query reads, explained on the generated store (sequential scans
 * off, as above): `relation` or `relation[index]` per scan, in plan order.
 */
async function scansOf(c: Client, q: UsageQuery): Promise<string[]> {
  const statements: SqlQuery[] = [];
  await runUsageQuery(postgresDialect, async (sq) => (statements.push(sq), []), q);
  // A bitmap heap scan names its relation, and the bitmap index scans below it their index.
  const index = (n: PlanNode) => [n, ...(n.Plans ?? [])].find((p) => p['Index Name'])?.['Index Name'];
  const scans = (n: PlanNode): string[] => [
    ...(n['Relation Name'] ? [`${n['Relation Name']}${index(n) ? `[${index(n)}]` : ''}`] : []),
    ...(n.Plans ?? []).flatMap(scans),
  ];
  await c.query('SET enable_seqscan = off');
  try {
    const out: string[] = [];
    for (const sq of statements) {
      const [row] = (await c.query(`EXPLAIN (FORMAT JSON) ${sq.sql}`, sq.params as unknown[])).rows as {
        'QUERY PLAN': { Plan: PlanNode }[];
      }[];
      out.push(...scans(row['QUERY PLAN'][0].Plan));
    }
    return out;
  } finally {
    await c.query('RESET enable_seqscan');
  }
}

/**
 * The long-range reads of migration 023's rollups (docs/scaling.md): a daily series by a built-in reads the daily
 * rollup per built-in, never the hourly one; a tag grouped over a range holding a whole month reads that month's
 * rows of the monthly rollup per tag value; one tag value's daily series seeks that value's days.
 */
async function expectLongRangePlans(c: Client): Promise<void> {
  const byModel = await scansOf(c, { from: FROM, to: END, groupBy: ['model'], interval: 'day' });
  expect(byModel).to.include('usage_dims_rollup_daily[usage_dims_rollup_daily_pkey]');
  expect(byModel.filter((s) => s.startsWith('usage_rollup_hourly'))).to.deep.equal([]);
  const customers = await scansOf(c, { from: FROM, to: monthStart(END, 1), groupBy: ['customer_id'] });
  expect(customers).to.include('usage_tag_rollup_monthly[usage_tag_rollup_monthly_pkey]');
  expect(customers.filter((s) => s.startsWith('usage_tag_rollup_hourly'))).to.deep.equal([]);
  const one = { customer_id: CUSTOMER_NAMES[0] };
  const series = await scansOf(c, { from: FROM, to: END, groupBy: [], interval: 'day', filters: one });
  expect(series.filter((s) => s.startsWith('usage_tag_rollup_daily'))).to.deep.equal([
    'usage_tag_rollup_daily[usage_tag_rollup_daily_value]',
  ]);
}

describe('big-store generator (100k records) against the write path', function () {
  this.timeout(900_000);

  it('SQLite: records, tag sets and every rollup row as insertBatch stores them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-scale-test-'));
    try {
      await generateSqlite(join(dir, 'generated.db'), { records: RECORDS, days: DAYS, end: END });
      const store = await openStore(`sqlite:${join(dir, 'write-path.db')}`);
      const generated = sqliteRows(join(dir, 'generated.db'));
      const written = sqliteRows(join(dir, 'write-path.db'));
      try {
        const result = await checkAgainstWritePath(generated.rows, { store, rows: written.rows }, FROM, END, true);
        expect(result.records).to.equal(RECORDS);
        expect(result.differences).to.deep.equal({});
        expect(result.rows.usage_tag_rollup_hourly).to.be.greaterThan(result.rows.usage_rollup_hourly);
        // The comparison sees a single count off in one rollup row.
        const db = new Database(join(dir, 'generated.db'));
        db.prepare('UPDATE usage_rollup_daily SET requests = requests + 1 WHERE day = ?').run(FROM);
        db.close();
        const off = await compareStores(generated.rows, written.rows, FROM, END, true);
        expect(Object.keys(off.differences)).to.deep.equal(['usage_rollup_daily']);
        await expectMonthsAgreeWithDays(await openStore(`sqlite:${join(dir, 'generated.db')}`));
      } finally {
        generated.close();
        written.close();
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('PostgreSQL: records, tag sets and every rollup row as insertBatch stores them', async function () {
    const url = await requirePostgres(this, 'big-store generator on PostgreSQL');
    const tag = `${process.pid}_${Date.now().toString(36)}`;
    const [genSchema, refSchema] = [`tg_scale_gen_${tag}`, `tg_scale_ref_${tag}`];
    const c = new Client({ connectionString: url });
    await c.connect();
    const rowsIn =
      (schema: string): Rows =>
      async (sql) => {
        await c.query(`SET search_path TO ${schema}`);
        return (await c.query(sql)).rows;
      };
    try {
      await generatePostgres(url, genSchema, { records: RECORDS, days: DAYS, end: END });
      const store = await openStore(url, { schema: refSchema });
      try {
        const result = await checkAgainstWritePath(
          rowsIn(genSchema),
          { store, rows: rowsIn(refSchema) },
          FROM,
          END,
          true,
        );
        expect(result.records).to.equal(RECORDS);
        expect(result.differences).to.deep.equal({});
        await c.query(`SET search_path TO ${genSchema}`);
        for (const [label, scans] of await recordScans(c)) expect(scans, label).to.deep.equal([]);
        const hashed = 'Aggregate Hashed by s.grp';
        const days = await tagSetPlan(c, END - 3 * DAY, END);
        expect(days).to.deep.equal({ sorted: [false], root: hashed, indexes: ['usage_tag_set_daily_day'] });
        // A range holding a whole month reads that month's rows of the monthly rollup, hashed into groups as well.
        const months = await tagSetPlan(c, FROM, monthStart(END, 1), 'usage_tag_set_monthly');
        expect(months).to.deep.equal({ sorted: [false], root: hashed, indexes: ['usage_tag_set_monthly_month'] });
        await expectLongRangePlans(c);
        await expectMonthsAgreeWithDays(await openStore(url, { schema: genSchema }));
      } finally {
        await store.close();
      }
    } finally {
      await c.query(`DROP SCHEMA IF EXISTS ${genSchema} CASCADE; DROP SCHEMA IF EXISTS ${refSchema} CASCADE`);
      await c.end();
    }
  });
});
