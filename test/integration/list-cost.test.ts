/**
 * List price and effective price apart (pricing.discounts): a real gateway with a 24% discount on OpenAI (the 0.76
 * multiplier a team measured), requests through the official SDKs answered with recorded responses, on SQLite and
 * PostgreSQL. The records, GET /api/usage, the rollups, the FOCUS export and a reprice are checked against figures
 * computed here from the fixtures' usage and the catalog's list rates.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { request } from 'undici';
import { repriceRange } from '../../cli/reprice-run';
import { PriceCatalog } from '../../pricing/catalog';
import { addTotals, zeroTotals, contribution } from '../../storage/counters';
import { csvRows } from '../helpers/csv';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { requirePostgres } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';

const HOUR = 3_600_000;
/**
 * openai/chat_completion_cached_tokens.json: 1,149 prompt tokens of which 1,024 cached, 353 completion tokens; at
 * gpt-4o-mini's list rates ($0.15 input, $0.075 cached input, $0.60 output per 1M tokens), in pico-USD.
 */
const MINI_LIST = 125n * 150_000n + 1_024n * 75_000n + 353n * 600_000n;

const pgSchema = `tg_listcost_${process.pid}_${Date.now()}`;
const backends = [
  { name: 'SQLite', storage: async () => '' },
  {
    name: 'PostgreSQL',
    storage: async (ctx: Mocha.Context) =>
      `storage: { url: "${await requirePostgres(ctx, 'list cost on PostgreSQL')}", schema: ${pgSchema} }`,
  },
];

for (const backend of backends)
  describe(`list cost beside the effective cost (${backend.name})`, () => {
    const upstream = new TestUpstream();
    let gw: TestGateway;
    const from = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
    const to = from + 3 * HOUR;

    const admin = async (path: string) => {
      const res = await request(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(res.statusCode, path).to.equal(200);
      return res.body.text();
    };
    const usage = async (query = '') => JSON.parse(await admin(`/api/usage?from=${from}&to=${to}${query}`));
    const records = async () =>
      (await gw.gateway.store.listRequests({ from, to, limit: 1000 })).records.sort((a, b) => (a.id < b.id ? -1 : 1));

    /** Every rollup path (hourly by model, daily and per tag set) against the sums of the stored records. */
    async function expectRollupsMatchRecords() {
      const want = (await records()).reduce((t, r) => addTotals(t, contribution(r)), zeroTotals());
      const store = gw.gateway.store;
      const [byHour] = await store.queryUsage({ from, to, groupBy: [] });
      const byModel = await store.queryUsage({ from, to, groupBy: ['model'] });
      const byTag = await store.queryUsage({ from, to, groupBy: ['team'] });
      for (const rows of [[byHour], byModel, byTag]) {
        const got = rows.reduce((t, r) => addTotals(t, r), zeroTotals());
        expect([got.costPico, got.discountPico, got.listCostCount]).to.deep.equal([
          want.costPico,
          want.discountPico,
          want.listCostCount,
        ]);
      }
      return want;
    }

    before(async function () {
      const storage = await backend.storage(this);
      await upstream.start();
      gw = await startTestGateway(upstream.url, `${storage}\npricing: { discounts: { openai: "0.24" } }`);
      const headers = { 'X-Gateway-Key': gw.key, 'X-Gateway-Metadata': JSON.stringify({ team: 'search' }) };
      const openai = new OpenAI({
        apiKey: OPENAI_KEY,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: headers,
      });
      const anthropic = new Anthropic({
        apiKey: ANTHROPIC_KEY,
        baseURL: gw.url,
        maxRetries: 0,
        defaultHeaders: headers,
      });
      for (let i = 0; i < 3; i++)
        await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      await anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      });
      for (let i = 0; i < 200 && (await usage()).total?.requests !== 4; i++)
        await new Promise((r) => setTimeout(r, 25));
    });

    after(async () => {
      await gw?.stop();
      await upstream.stop();
      if (backend.name !== 'PostgreSQL' || !process.env.DATABASE_URL) return;
      const { Client } = await import('pg');
      const c = new Client({ connectionString: process.env.DATABASE_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
      await c.end();
    });

    it('records the cost at 0.76 x the list cost exactly, and the list cost beside it; none off another provider', async () => {
      const stored = await records();
      const mini = stored.filter((r) => r.model === 'gpt-4o-mini');
      expect(mini.map((r) => [r.costPico, r.listCostPico])).to.deep.equal(
        Array(3).fill([(MINI_LIST * 76n) / 100n, MINI_LIST]),
      );
      expect((MINI_LIST * 76n) % 100n, 'an exact pico-USD amount').to.equal(0n);
      const [claude] = stored.filter((r) => r.provider === 'anthropic');
      expect(claude.listCostPico).to.equal(claude.costPico).and.to.not.equal(null);
      const listed = JSON.parse(await admin(`/api/requests?from=${from}&to=${to}&filter[model]=gpt-4o-mini`));
      expect(listed.data.map((r: any) => [r.cost_usd, r.list_cost_usd])).to.deep.equal(
        Array(3).fill(['0.000233586', '0.00030735']),
      );
    });

    it('GET /api/usage shows the list cost, the cost and the discount apart, per provider and in total', async () => {
      const body = await usage('&group_by=provider');
      const openai = body.rows.find((r: any) => r.group.provider === 'openai');
      const claude = body.rows.find((r: any) => r.group.provider === 'anthropic');
      expect(openai).to.include({
        cost_usd: '0.000700758',
        list_cost_usd: '0.00092205',
        discount_usd: '0.000221292',
        list_cost_unknown_count: 0,
      });
      expect(claude.discount_usd).to.equal('0');
      expect(claude.list_cost_usd).to.equal(claude.cost_usd);
      expect(BigInt(body.total.list_cost_pico) - BigInt(body.total.cost_pico)).to.equal((3n * MINI_LIST * 24n) / 100n);
    });

    it('keeps the rollups equal to the sums of the records, list cost included', async () => {
      const sums = await expectRollupsMatchRecords();
      expect(sums.discountPico).to.equal((3n * MINI_LIST * 24n) / 100n);
      expect(sums.listCostCount).to.equal(4);
    });

    it('FOCUS: ListCost at the list price, BilledCost, EffectiveCost and ContractedCost at the discounted one', async () => {
      const rows = csvRows(await admin(`/api/usage.focus.csv?from=${from}&to=${to}`));
      const header = rows[0];
      const col = (row: string[], name: string) => row[header.indexOf(name)];
      const mini = rows.slice(1).find((r) => col(r, 'SkuId') === 'gpt-4o-mini')!;
      expect(['BilledCost', 'EffectiveCost', 'ContractedCost', 'ListCost'].map((c) => col(mini, c))).to.deep.equal([
        '0.000700758',
        '0.000700758',
        '0.000700758',
        '0.00092205',
      ]);
      expect(col(mini, 'x_ListCostUnknownRequests')).to.equal('0');
    });

    it('a reprice after the discount changes moves the cost and keeps the list cost; the rollups follow', async () => {
      const halfOff = PriceCatalog.fromConfig({ discounts: { openai: '0.5' } });
      const before = await records();
      const [claudeBefore] = before.filter((r) => r.provider === 'anthropic');
      const versions = await rowVersions();
      // The dry run: every record read, the three OpenAI ones would change; the Anthropic one's cost comes out the
      // same under the new catalog (no discount on it), so only its catalog version would move: not a change.
      const dry = await repriceRange(gw.gateway.store, halfOff, { from, to }, { dryRun: true, reason: 'dry' });
      expect(dry.result).to.deep.equal({ scanned: 4, updated: 0 });
      expect(dry.diff.changed).to.equal(3);
      const diffRows = dry.diff.rows();

      const run = await repriceRange(gw.gateway.store, halfOff, { from, to }, { reason: 'new contract' });
      expect(run.result).to.deep.equal({ scanned: 4, updated: 3 });
      expect(run.diff.rows(), "the applied run's diff is the dry run's").to.deep.equal(diffRows);
      const after = await records();
      const mini = after.filter((r) => r.model === 'gpt-4o-mini');
      expect(mini.map((r) => [r.costPico, r.listCostPico])).to.deep.equal(Array(3).fill([MINI_LIST / 2n, MINI_LIST]));
      expect(mini.every((r) => r.priceVersion === halfOff.version)).to.equal(true);
      // The Anthropic record was not rewritten: its stored values, version included, are what they were.
      expect(after.find((r) => r.id === claudeBefore.id)).to.deep.equal(claudeBefore);
      expect(claudeBefore.priceVersion).to.not.equal(halfOff.version);
      const changedRows = await rowVersions();
      if (versions && changedRows)
        expect(
          before.filter((r) => versions.get(r.id) !== changedRows.get(r.id)).map((r) => r.model),
          'rows PostgreSQL wrote (their xmin moved)',
        ).to.deep.equal(['gpt-4o-mini', 'gpt-4o-mini', 'gpt-4o-mini']);
      const log = await gw.gateway.store.repriceLog!().list(1);
      expect(log[0]).to.include({ scanned: 4, changed: 3 });

      const sums = await expectRollupsMatchRecords();
      expect(sums.discountPico).to.equal((3n * MINI_LIST) / 2n);
      const openai = (await usage('&group_by=provider')).rows.find((r: any) => r.group.provider === 'openai');
      expect(openai).to.include({ list_cost_usd: '0.00092205', cost_usd: '0.000461025', discount_usd: '0.000461025' });
    });

    /** On PostgreSQL, each record's row version (xmin): it moves when, and only when, the row is written. */
    async function rowVersions(): Promise<Map<string, string> | undefined> {
      if (backend.name !== 'PostgreSQL') return undefined;
      const { Client } = await import('pg');
      const c = new Client({ connectionString: process.env.DATABASE_URL, options: `-c search_path=${pgSchema}` });
      await c.connect();
      try {
        const res = await c.query<{ id: string; xmin: string }>(
          'SELECT id, xmin::text AS xmin FROM usage_records WHERE ts >= $1 AND ts < $2',
          [from, to],
        );
        return new Map(res.rows.map((r) => [r.id, r.xmin]));
      } finally {
        await c.end();
      }
    }
  });
