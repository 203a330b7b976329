/**
 * The admin API's reads (admin/reads/): they run on a reader thread of their own, never on the proxy's event loop,
 * within admin.query_timeout_ms, and every answer is bounded (a page of groups with "other" for the rest, pages of keys
 * and budgets, a capped number of time buckets). Against SQLite always and PostgreSQL with DATABASE_URL (skipped, or
 * failed in CI, without it: helpers/services.ts).
 */
import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { Client } from 'pg';
import { request } from 'undici';
import type { UsageRecord } from '../../records/usage-record';
import { READ_POOL_APPLICATION_NAME } from '../../storage/read-connection';
import { adminGet } from '../helpers/admin';
import { csvRows } from '../helpers/csv';
import { startTestGateway, TEST_ADMIN_TOKEN, type TestGateway, chatThrough } from '../helpers/gateway';
import { requirePostgres } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';

const DAY = 86_400_000;
/** The dashboard's heaviest grouping (the last 30 days), over the records seeded into the `bulk` workspace below. */
const HEAVY = '/api/usage?group_by=customer_id,model&interval=hour&filter[workspace]=bulk';

interface Backend {
  name: string;
  /** storage: block of a store of its own (empty: the default SQLite file in the gateway's data folder). */
  storage(ctx: Mocha.Context, name: string): Promise<string>;
  cleanup?(): Promise<void>;
}

let pgUrl: string | undefined;
const pgSchema = `tg_admin_reads_${process.pid}_${Date.now().toString(36)}`;
const backends: Backend[] = [
  { name: 'SQLite', storage: async () => '' },
  {
    name: 'PostgreSQL',
    storage: async (ctx, name) => {
      pgUrl = await requirePostgres(ctx, 'admin reads on PostgreSQL');
      return `storage: { url: "${pgUrl}", schema: ${pgSchema}_${name} }`;
    },
    cleanup: async () => {
      if (!pgUrl) return;
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      for (const name of ['small', 'big']) await c.query(`DROP SCHEMA IF EXISTS ${pgSchema}_${name} CASCADE`);
      await c.end();
    },
  },
];

/** A record as the usage recorder writes one. */
function record(
  id: string,
  ts: number,
  costPico: bigint,
  tags: Record<string, string>,
  model = 'gpt-4o-mini',
  workspaceId = 'default',
): UsageRecord {
  return usageRecord({
    id,
    ts,
    workspaceId,
    keyId: 'test',
    model,
    servedModel: model,
    inputTokens: 10,
    outputTokens: 5,
    ...ZERO_BUCKETS,
    costPico,
    provenance: 'measured',
    priceVersion: 'test',
    latencyMs: 10,
    ttfbMs: 5,
    tags,
  });
}

async function admin(gw: TestGateway, path: string): Promise<{ status: number; json: any; text: string; ms: number }> {
  const started = performance.now();
  const res = await request(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  const text = await res.body.text();
  const ms = performance.now() - started;
  return { status: res.statusCode, text, json: text.startsWith('{') ? JSON.parse(text) : undefined, ms };
}

/** One proxied chat completion: its status and how long it took. */
async function proxied(gw: TestGateway, headers: Record<string, string> = {}): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await chatThrough(gw, { ...headers });
  await res.body.text();
  return { status: res.statusCode, ms: performance.now() - started };
}

/** Every page of a list answering next_cursor, fetched `limit` at a time. */
async function allPages(gw: TestGateway, path: string, limit: number): Promise<any[][]> {
  const pages: any[][] = [];
  let cursor: string | null = null;
  do {
    const page = await adminGet(gw, `${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    pages.push(page.data);
    cursor = page.next_cursor;
  } while (cursor && pages.length < 100);
  return pages;
}

/** The JSON of the first 200 answer to `path` within `ms` (a read may wait its turn behind a cancelled one). */
async function answersWithin(gw: TestGateway, path: string, ms: number): Promise<any> {
  let res = await admin(gw, path);
  for (const deadline = Date.now() + ms; res.status !== 200 && Date.now() < deadline; await sleep(100))
    res = await admin(gw, path);
  expect(res.status, res.text).to.equal(200);
  return res.json;
}

const sum = (xs: readonly (string | null)[]): bigint => xs.reduce((a, x) => a + BigInt(x ?? 0), 0n);

for (const backend of backends)
  describe(`admin reads: off the proxy's thread, bounded, within a time limit (${backend.name})`, () => {
    const upstream = new TestUpstream();
    let gw: TestGateway;

    before(async function () {
      const storage = await backend.storage(this, 'small');
      await upstream.start();
      gw = await startTestGateway(
        upstream.url,
        `${storage}
admin: { query_timeout_ms: 120000 }
workspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { budgets: [{ period: day, usd: "1000", per_tag: team }] } }]`,
      );
    });
    after(async () => {
      await gw?.stop();
      await upstream.stop();
      await backend.cleanup?.();
    });

    it('a grouping answers the top groups by cost and sums the others as "other": rows + other add up to the total', async () => {
      // Five customers, costs chosen so that every rank differs: c1 800 (two records), c2 700, c3 400, c4 200 (two), c5 50.
      const now = Date.now();
      const t = (hoursAgo: number) => now - hoursAgo * 3_600_000;
      const suite = { suite: 'top-n' };
      const written = [
        record('topn-1', t(30), 500n, { ...suite, customer_id: 'c1' }),
        record('topn-2', t(2), 300n, { ...suite, customer_id: 'c1' }),
        record('topn-3', t(3), 700n, { ...suite, customer_id: 'c2' }),
        record('topn-4', t(4), 400n, { ...suite, customer_id: 'c3' }),
        record('topn-5', t(5), 100n, { ...suite, customer_id: 'c4' }),
        record('topn-6', t(6), 100n, { ...suite, customer_id: 'c4' }),
        record('topn-7', t(7), 50n, { ...suite, customer_id: 'c5' }),
      ];
      await gw.gateway.store.insertBatch(written);
      const q = `from=${now - 2 * DAY}&to=${now}&filter[suite]=top-n&group_by=customer_id`;

      const first = await adminGet(gw, `/api/usage?${q}&limit=2`);
      expect(first.rows.map((r: any) => [r.group.customer_id, r.requests, r.cost_pico])).to.deep.equal([
        ['c1', 2, '800'],
        ['c2', 1, '700'],
      ]);
      expect(first.other).to.include({ groups: 3, requests: 4, cost_pico: '650' });
      expect(first.total).to.include({ requests: 7, cost_pico: '2150' });
      expect([first.groups, first.limit, first.offset, first.next_offset]).to.deep.equal([5, 2, 0, 2]);

      const second = await adminGet(gw, `/api/usage?${q}&limit=2&offset=2`);
      expect(second.rows.map((r: any) => r.group.customer_id)).to.deep.equal(['c3', 'c4']);
      expect(second.other).to.include({ groups: 3, requests: 4, cost_pico: '1550' });
      expect(second.next_offset).to.equal(4);
      const last = await adminGet(gw, `/api/usage?${q}&limit=2&offset=4`);
      expect(last.rows.map((r: any) => r.group.customer_id)).to.deep.equal(['c5']);
      expect(last.next_offset).to.equal(null);
      for (const page of [first, second, last]) {
        expect(sum([...page.rows.map((r: any) => r.cost_pico), page.other.cost_pico])).to.equal(2150n);
        expect(page.rows.reduce((a: number, r: any) => a + r.requests, 0) + page.other.requests).to.equal(7);
      }
      expect((await adminGet(gw, `/api/usage?${q}&limit=5`)).other, 'every group on the page').to.equal(null);

      // With an interval a group is ranked by its cost over the range: both of c1's days are on its page.
      const daily = await adminGet(gw, `/api/usage?${q}&interval=day&limit=1`);
      expect(daily.rows.map((r: any) => [r.group.customer_id, r.cost_pico])).to.have.deep.members([
        ['c1', '500'],
        ['c1', '300'],
      ]);
      expect(daily.rows.map((r: any) => r.bucket)).to.have.length(2);
      expect(daily.other).to.include({ groups: 4, requests: 5, cost_pico: '1350' });

      const csv = await admin(gw, `/api/usage.csv?${q}&limit=2`);
      const lines = csv.text.trim().split('\r\n');
      expect(lines.map((l) => l.split(',').slice(0, 2))).to.deep.equal([
        ['customer_id', 'requests'],
        ['c1', '2'],
        ['c2', '1'],
        ['(3 other groups)', '4'],
      ]);

      for (const bad of ['limit=0', 'limit=1001', 'offset=-1', 'offset=x']) {
        const res = await admin(gw, `/api/usage?${q}&${bad}`);
        expect(res.status, bad).to.equal(400);
        expect(res.json.error).to.include({ code: 'invalid_body', param: bad.split('=')[0] });
      }
    });

    it('usage.csv?limit=all exports every group, more than a page may hold, most expensive first and no other line', async () => {
      const now = Date.now();
      const groups = 1200; // more than LIMIT_MAX (1000), the most one JSON page holds
      const written = Array.from({ length: groups }, (_, i) =>
        record(`all-${i}`, now - 3_600_000, BigInt(1000 + i), { suite: 'csv-all', customer_id: `cust-${i}` }),
      );
      await gw.gateway.store.insertBatch(written);
      const q = `from=${now - DAY}&to=${now}&filter[suite]=csv-all&group_by=customer_id`;
      const csv = await admin(gw, `/api/usage.csv?${q}&limit=all`);
      expect(csv.status, csv.text.slice(0, 300)).to.equal(200);
      const rows = csvRows(csv.text);
      expect(rows[0].slice(0, 2)).to.deep.equal(['customer_id', 'requests']);
      const customers = rows.slice(1).map((r) => r[0]);
      expect(customers).to.have.length(groups);
      expect(customers[0]).to.equal(`cust-${groups - 1}`);
      expect(customers[groups - 1]).to.equal('cust-0');
      expect(new Set(customers).size).to.equal(groups);
      expect(customers.some((c) => c.includes('other groups'))).to.equal(false);
      // The JSON API keeps its page limit.
      const json = await admin(gw, `/api/usage?${q}&limit=all`);
      expect(json.status).to.equal(400);
      expect(json.json.error).to.include({ code: 'invalid_body', param: 'limit' });
    });

    it("keys come page by page: the store's oldest first, then those of the config file, each once", async () => {
      const created: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await request(`${gw.adminUrl}/api/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ label: `paged-${i}` }),
        });
        expect(res.statusCode).to.equal(201);
        created.push(((await res.body.json()) as any).id);
      }
      const pages = await allPages(gw, '/api/keys', 2);
      expect(pages.map((p) => p.length)).to.deep.equal([2, 2, 2]);
      const listed = pages.flat();
      expect(listed.filter((k) => k.source === 'store').map((k) => k.id)).to.have.members(created);
      const stored = listed.filter((k) => k.source === 'store');
      const order = stored.map((k) => `${k.created_at}|${k.id}`);
      expect(order).to.deep.equal([...order].sort(), 'oldest first, then by id');
      expect(listed.map((k) => k.source)).to.deep.equal(['store', 'store', 'store', 'store', 'store', 'config']);
      expect(listed[5].id).to.equal('test');

      const bad = await admin(gw, '/api/keys?cursor=bm90LWEtY3Vyc29y');
      expect(bad.status).to.equal(400);
      expect(bad.json.error).to.include({ code: 'invalid_body', param: 'cursor' });
    });

    it('budgets come page by page, in listing order (workspace, budget id, tag value), each once', async () => {
      const teams = ['t1', 't2', 't3', 't4', 't5'];
      for (const team of teams) expect((await proxied(gw, { 'x-gateway-metadata-team': team })).status).to.equal(200);
      const pages = await allPages(gw, '/api/budgets', 2);
      expect(pages.map((p) => p.length)).to.deep.equal([2, 2, 1]);
      expect(pages.flat().map((b) => b.scope)).to.deep.equal(teams.map((t) => `team=${t}`));
      const bad = await admin(gw, '/api/budgets?cursor=%7B');
      expect(bad.status).to.equal(400);
      expect(bad.json.error).to.include({ code: 'invalid_body', param: 'cursor' });
    });

    it('a range of millennia is refused at once with a 400 naming the limit, and the gateway serves on', async () => {
      // To the last time a Date holds: an answer could not even write it back as a date-time.
      const farthest = await admin(gw, '/api/usage/series?from=0&to=8640000000000000&interval=day');
      expect(farthest.status, farthest.text).to.equal(400);
      expect(farthest.json.error).to.include({ code: 'invalid_body', param: 'to' });
      expect(farthest.json.error.message).to.include('9999');
      expect(farthest.ms).to.be.below(2000);
      const lastTime = Date.parse('9999-12-31T23:59:59.999Z');
      for (const path of [
        `/api/usage/series?from=0&to=${lastTime}&interval=day`,
        `/api/usage?from=0&to=${lastTime}&interval=day&group_by=model`,
        `/api/usage.csv?from=0&to=${lastTime}&interval=hour`,
      ]) {
        const res = await admin(gw, path);
        expect(res.status, `${path}: ${res.text}`).to.equal(400);
        expect(res.json.error.code).to.equal('range_too_large');
        expect(res.json.error.message).to.include('10000');
        expect(res.ms, path).to.be.below(2000);
      }
      // A page of groups times its buckets is bounded too: 100 groups x 1,001 hours is past 100,000 rows.
      const rows = await admin(gw, `/api/usage?from=0&to=${1001 * 3_600_000}&interval=hour&group_by=model`);
      expect(rows.status).to.equal(400);
      expect(rows.json.error).to.include({ code: 'range_too_large', param: 'limit' });
      expect(
        (await admin(gw, `/api/usage?from=0&to=${1001 * 3_600_000}&interval=hour&group_by=model&limit=99`)).status,
      ).to.equal(200);
      // Ungrouped by time, the whole range is one cheap total.
      expect((await admin(gw, `/api/usage?from=0&to=${lastTime}`)).status).to.equal(200);
      expect((await proxied(gw)).status).to.equal(200);
      expect((await admin(gw, '/api/info')).status).to.equal(200);
    });

    describe('on a store of 100,000 records', () => {
      const RECORDS = 100_000;
      let writtenCost = 0n;
      let big: TestGateway;
      let storage: string;

      before(async function () {
        this.timeout(300_000);
        storage = await backend.storage(this, 'big');
        big = await startTestGateway(upstream.url, `${storage}\nadmin: { query_timeout_ms: 120000 }`);
        // Through the store's own write path (rollups and tag sets as the gateway keeps them): 5,000 customers, 3 models,
        // over the last 30 days, in a workspace of their own (the proxied requests of these tests are recorded beside
        // them). Grouped by customer and model by the hour, nearly every record is a row of its own.
        const now = Date.now();
        const models = ['gpt-4o-mini', 'gpt-4o', 'o3'];
        for (let start = 0; start < RECORDS; start += 5000) {
          const batch: UsageRecord[] = [];
          for (let i = start; i < start + 5000; i++) {
            const cost = 1000n + BigInt(i % 7);
            writtenCost += cost;
            batch.push(
              record(
                `big-${i}`,
                now - 30 * DAY + 60_000 + Math.floor((i / RECORDS) * (30 * DAY - 120_000)),
                cost,
                { customer_id: `c-${i % 5000}` },
                models[i % 3],
                'bulk',
              ),
            );
          }
          await big.gateway.store.insertBatch(batch);
        }
      });
      after(async function () {
        this.timeout(300_000); // its admin answers, every record among them, are read for the secret scan when it stops
        await big?.stop();
      });

      it('a long grouping on the admin API does not hold proxied requests: each completes in a fraction of its time', async function () {
        this.timeout(180_000);
        const heavy = admin(big, HEAVY);
        let running = true;
        void heavy.finally(() => (running = false));
        const during: { status: number; ms: number }[] = [];
        while (running) during.push(await proxied(big));
        const answer = await heavy;
        expect(answer.status, answer.text.slice(0, 300)).to.equal(200);
        expect(during.every((r) => r.status === 200)).to.equal(true);
        expect(during.length, `proxied requests completed during the ${answer.ms.toFixed(0)} ms query`).to.be.at.least(
          3,
        );
        // A loop, not Math.max(...): a slow query on a loaded machine leaves more requests than a call's arguments may hold.
        const slowest = during.reduce((max, r) => Math.max(max, r.ms), 0);
        expect(slowest, `slowest proxied request while the ${answer.ms.toFixed(0)} ms query ran`).to.be.below(
          answer.ms / 4,
        );

        // The answer is one page: 100 of the 15,000 (customer, model) groups, the rest in "other", adding up to what was written.
        const body = answer.json;
        expect(new Set(body.rows.map((r: any) => JSON.stringify(r.group))).size).to.equal(100);
        expect(body.groups).to.equal(15_000);
        expect(body.other.groups).to.equal(14_900);
        expect(body.rows.reduce((a: number, r: any) => a + r.requests, 0) + body.other.requests).to.equal(RECORDS);
        expect(sum([...body.rows.map((r: any) => r.cost_pico), body.other.cost_pico])).to.equal(writtenCost);
        expect(body.total.cost_pico).to.equal(String(writtenCost));
      });

      it('past admin.query_timeout_ms the query is cancelled: 503 query_timeout, and the gateway serves on', async function () {
        this.timeout(120_000);
        // PostgreSQL: the lock below holds the query past the limit. SQLite: a quarter of the heavy grouping's own time
        // on this machine now (measured on the gateway without a short limit), so the query always runs past it, and at
        // least 200 ms, well above a light read's, which must answer within the limit after the cancellation.
        let limitMs = 2000;
        if (backend.name !== 'PostgreSQL') {
          const started = Date.now();
          expect((await admin(big, HEAVY)).status).to.equal(200);
          limitMs = Math.min(2000, Math.max(200, Math.round((Date.now() - started) / 4)));
        }
        // A second gateway on the same store, with a short time limit.
        const other = await startTestGateway(
          upstream.url,
          `${storage || `storage: { url: "sqlite:${big.dataDir}/tollgate.db" }`}\nadmin: { query_timeout_ms: ${limitMs} }`,
        );
        let pg: Client | undefined;
        try {
          /** Statements of the read pools waiting for a lock this test's transaction holds. */
          const blocked = async () =>
            (
              await pg!.query(
                'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND pg_backend_pid() = ANY (pg_blocking_pids(pid))',
                [READ_POOL_APPLICATION_NAME],
              )
            ).rows[0].n;
          let wasBlocked = 0;
          if (backend.name === 'PostgreSQL') {
            // The reader thread connected first (a light read answered), so that the query reaches the database at once.
            await answersWithin(other, '/api/dimensions', 20_000);
            // The query waits for a lock that this transaction holds: only PostgreSQL's statement_timeout ends its wait.
            pg = new Client({ connectionString: pgUrl });
            await pg.connect();
            await pg.query('BEGIN');
            await pg.query(`LOCK TABLE ${pgSchema}_big.usage_tag_rollup_hourly IN ACCESS EXCLUSIVE MODE`);
          }
          const heavy = admin(other, HEAVY);
          if (pg) {
            let answered = false;
            void heavy.finally(() => (answered = true));
            while (!answered && wasBlocked === 0) {
              wasBlocked = await blocked();
              await sleep(20);
            }
          }
          const timedOut = await heavy;
          expect(timedOut.status, timedOut.text).to.equal(503);
          expect(timedOut.json.error).to.include({ code: 'query_timeout', type: 'gateway_error' });
          expect(timedOut.json.error.message).to.include(`${limitMs} ms`);
          // How soon past the limit the answer comes depends on the machine's load: a timing claim, left to the report.
          if (pg) {
            // Cancelled in the database, not only abandoned: the read pool's statements waited for the lock, and none is left.
            // (Without statement_timeout a statement would wait for as long as this transaction holds the lock.)
            expect(wasBlocked, 'statements waiting for the lock while the query ran').to.be.at.least(1);
            let left = await blocked();
            for (const deadline = Date.now() + limitMs + 2000; left > 0 && Date.now() < deadline; await sleep(50))
              left = await blocked();
            expect(left, 'statements still waiting for the lock').to.equal(0);
            await pg.query('ROLLBACK');
          }
          expect((await proxied(other)).status).to.equal(200);
          // A light read answers again (on SQLite, a new reader thread took over from the cancelled one).
          expect((await answersWithin(other, '/api/info', 10_000)).has_records).to.equal(true);
        } finally {
          await pg?.end();
          await other.stop();
        }
      });
    });
  });
