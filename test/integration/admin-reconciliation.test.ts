/**
 * GET /api/reconciliation on a running gateway: runs stored by reconcile/ (against a loopback server answering like
 * OpenAI's admin API, test/fixtures/reconcile) listed newest first page by page, and the newest report's lines a
 * page at a time. Every answer is also checked against the OpenAPI document (helpers/admin-contract.ts).
 */
import { expect } from 'chai';
import { request } from 'undici';
import { runReconciliation } from '../../reconcile/run';
import { adminGet } from '../helpers/admin';
import { TEST_ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway';
import { gatewayRecord } from '../helpers/gateway-record';
import { jsonReply, providerAdminApi } from '../helpers/provider-admin-api';
import { samplesOf, scrape } from '../helpers/prometheus';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const D20 = Date.UTC(2025, 10, 20);
const MODEL = 'gpt-4o-mini-2024-07-18';

describe('admin API: GET /api/reconciliation', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url);
    const store = gw.gateway.store;
    await store.insertBatch([
      gatewayRecord('openai', MODEL, D20, { input: 1_000_000, cacheRead: 200_000, output: 300_000 }, '0.345'),
      gatewayRecord('openai', MODEL, D20 + DAY, { input: 1_000_000, output: 250_000 }, '0.3'),
    ]);
    const settings = { provider: 'openai', tolerance: '0.005', restateDays: 7, scopes: {} };
    const source = { kind: 'openai' as const, baseUrl: `${upstream.url}/openai/v1`, adminKey: 'sk-admin-route-test' };
    const deps = {
      queryUsage: store.queryUsage.bind(store),
      runs: store.reconciliationRuns!(),
      now: () => D20 + 30 * DAY,
    };
    const range = { from: D20, to: D20 + 2 * DAY };
    upstream.respondWith(providerAdminApi);
    await runReconciliation(deps, source, range, settings);
    upstream.respondWith(() => jsonReply({ error: { message: 'down' } }, 500));
    await runReconciliation(deps, source, range, settings);
    // A CSV export of a provider the gateway does not know: its gauge is "other", never a label of its own.
    const csv = `Date,Model,Cost (USD)\n2025-11-20,${MODEL},1\n`;
    await runReconciliation(deps, { kind: 'csv', name: 'x.csv', text: csv }, range, {
      ...settings,
      provider: 'made-up',
    });
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('lists the runs newest first, the failed one with its error, and the newest report a page of lines at a time', async () => {
    const first = await adminGet(gw, '/api/reconciliation?provider=openai&limit=1&lines_limit=1');
    expect(first.runs.map((r: any) => [r.status, r.provider, r.from, r.to])).to.deep.equal([
      ['failed', 'openai', '2025-11-20T00:00:00.000Z', '2025-11-22T00:00:00.000Z'],
    ]);
    expect(first.runs[0].error).to.match(/500/);
    expect(first.report.lines.map((l: any) => [l.day, l.status])).to.deep.equal([['2025-11-20', 'match']]);
    expect(first.report).to.include({ lines_total: 2, next_lines_offset: 1, provider: 'openai' });
    expect(first.report.totals).to.deep.include({ provider_usd: '0.945', gateway_usd: '0.645' });

    const second = await adminGet(
      gw,
      `/api/reconciliation?provider=openai&limit=1&cursor=${first.next_cursor}&lines_limit=1&lines_offset=1`,
    );
    expect(second.runs.map((r: any) => r.status)).to.deep.equal(['ok']);
    expect(second.runs[0].pages).to.deep.equal({ costs: 1, 'usage/completions': 2 });
    expect(second.next_cursor).to.equal(null);
    expect(second.report.lines.map((l: any) => [l.day, l.status, l.difference_usd])).to.deep.equal([
      ['2025-11-21', 'not_seen_by_gateway', '0.3'],
    ]);
    expect(second.report.next_lines_offset).to.equal(null);

    const failedRun = first.runs[0].id;
    expect((await adminGet(gw, `/api/reconciliation?run=${failedRun}`)).report).to.equal(null);
    expect((await adminGet(gw, '/api/reconciliation?provider=anthropic')).runs).to.deep.equal([]);
  });

  it("exports each provider's drift from its newest successful run as a gauge, provider labels bounded", async () => {
    const stored = (await adminGet(gw, '/api/reconciliation?provider=openai')).runs.find((r: any) => r.status === 'ok');
    expect(stored.drift).to.equal('0.317460'); // $0.30 of $0.945 billed went around the gateway
    const samples = await scrape(gw.adminUrl!);
    const drift = samplesOf(samples, 'tollgate_reconciliation_drift');
    expect(drift.map((s) => [s.labels.provider, s.value]).sort()).to.deep.equal([
      ['openai', 0.31746],
      ['other', 1],
    ]);
    const finished = samplesOf(samples, 'tollgate_reconciliation_last_success_timestamp_seconds', {
      provider: 'openai',
    });
    expect(finished.map((s) => s.value)).to.deep.equal([(D20 + 30 * DAY) / 1000]);
  });

  it('refuses a malformed page parameter with 400 naming it', async () => {
    for (const [query, param] of [
      ['run=abc', 'run'],
      ['lines_limit=0', 'lines_limit'],
      ['lines_offset=-1', 'lines_offset'],
      ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
    ]) {
      const res = await request(`${gw.adminUrl}/api/reconciliation?${query}`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      const body: any = await res.body.json();
      expect(res.statusCode, query).to.equal(400);
      expect(body.error).to.include({ code: 'invalid_body', param });
    }
  });
});
