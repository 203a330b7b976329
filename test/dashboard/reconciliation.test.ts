/**
 * The reconciliation view in Debian's Chromium (playwright-core): runs stored by reconcile/ against a loopback server
 * answering like the providers' admin APIs (test/fixtures/reconcile), listed newest first; a run's days x models with
 * their status, its totals, the inferred discount, and the gateway against the bill drawn as two lines per day.
 */
import { expect } from 'chai';
import { parseUsd } from '../../pricing/money';
import { runReconciliation, type BillSource } from '../../reconcile/run';
import { adminGet } from '../helpers/admin';
import { gatewayRecord } from '../helpers/gateway-record';
import { anthropicCostReport, jsonReply, providerAdminApi } from '../helpers/provider-admin-api';
import { resultPath, useDashboard } from './browser';

const DAY = 24 * 3600 * 1000;
const D20 = Date.UTC(2025, 10, 20);
const D21 = D20 + DAY;
const RANGE = { from: D20, to: D20 + 2 * DAY };

function anthropicAdminApi(req: { url: string }) {
  const path = new URL(req.url, 'http://x').pathname;
  if (path.endsWith('/usage_report/messages')) return jsonReply({ data: [], has_more: false, next_page: null });
  if (path.endsWith('/cost_report'))
    return jsonReply(
      anthropicCostReport([
        [D20, 'claude-sonnet-4-5-20250929', '456'],
        [D20, 'claude-haiku-4-5-20251001', '76'],
        [D20, 'claude-opus-4-1-20250805', '1140'],
        [D21, 'claude-new-model', '3'],
      ]),
    );
  return undefined;
}

describe('dashboard reconciliation view (Chromium, playwright-core)', function () {
  const suite = useDashboard({
    seed: async (gw, upstream) => {
      const store = gw.gateway.store;
      const openaiModel = 'gpt-4o-mini-2024-07-18';
      await store.insertBatch([
        // Priced at a negotiated discount (pricing.discounts) of 0.25: $0.345 of a list cost of $0.46.
        {
          ...gatewayRecord(
            'openai',
            openaiModel,
            D20,
            { input: 1_000_000, cacheRead: 200_000, output: 300_000 },
            '0.345',
          ),
          listCostPico: parseUsd('0.46'),
        },
        gatewayRecord('openai', openaiModel, D21, { input: 1_000_000, output: 250_000 }, '0.3'),
        gatewayRecord('anthropic', 'claude-sonnet-4-5-20250929', D20, { input: 1_000_000, output: 100_000 }, '6'),
        gatewayRecord('anthropic', 'claude-haiku-4-5-20251001', D20, { input: 1_000_000, output: 0 }, '1'),
        gatewayRecord('anthropic', 'claude-opus-4-1-20250805', D20, { input: 1_000_000, output: 0 }, '15'),
        gatewayRecord('anthropic', 'claude-new-model', D21, { input: 10_000, output: 100 }, null),
      ]);
      const deps = {
        queryUsage: store.queryUsage.bind(store),
        runs: store.reconciliationRuns!(),
        now: () => D20 + 30 * DAY,
      };
      const settings = (provider: string) => ({ provider, tolerance: '0.005', restateDays: 7, scopes: {} });
      const source = (kind: 'openai' | 'anthropic'): BillSource => ({
        kind,
        baseUrl: `${upstream.url}/${kind}/v1`,
        adminKey: `sk-admin-dashboard-${kind}`,
      });
      upstream.respondWith(anthropicAdminApi);
      await runReconciliation(deps, source('anthropic'), RANGE, settings('anthropic'));
      upstream.respondWith(providerAdminApi);
      await runReconciliation(deps, source('openai'), RANGE, settings('openai'));
      upstream.respondWith(() => jsonReply({ error: { message: 'down' } }, 503));
      await runReconciliation(deps, source('openai'), RANGE, settings('openai'));
    },
    timeoutMs: 120_000,
  });

  const ready = () => suite.page.waitForSelector('#view[data-view="reconciliation"][data-ready="true"]');
  const rows = (selector: string, attrs: string[]) =>
    suite.page.$$eval(
      selector,
      (trs, names) => trs.map((tr) => names.map((n) => (tr as HTMLElement).dataset[n])),
      attrs,
    );
  const cells = (col: string) =>
    suite.page.$$eval(`#recon-lines td[data-col="${col}"]`, (tds) =>
      tds.map((td) => (td as HTMLElement).dataset.value),
    );

  it('lists the runs newest first and shows the newest successful run: its lines, totals and the two lines per day', async () => {
    await suite.page.click('a[data-view="reconciliation"]');
    await ready();
    const answer = await adminGet(suite.gw, '/api/reconciliation?limit=20&lines_limit=1000');
    expect(await rows('#recon-runs tbody tr', ['run', 'status'])).to.deep.equal(
      answer.runs.map((r: any) => [String(r.id), r.status]),
    );
    expect(answer.runs.map((r: any) => [r.provider, r.status])).to.deep.equal([
      ['openai', 'failed'],
      ['openai', 'ok'],
      ['anthropic', 'ok'],
    ]);
    expect(await suite.page.getAttribute('#recon-report', 'data-run')).to.equal(String(answer.runs[1].id));
    expect(await rows('#recon-lines tbody tr', ['day', 'status'])).to.deep.equal([
      ['2025-11-20', 'match'],
      ['2025-11-21', 'not_seen_by_gateway'],
    ]);
    expect(await cells('gateway')).to.deep.equal(['0.345', '0.3']);
    expect(await cells('provider')).to.deep.equal(['0.345', '0.6']);
    expect(await cells('difference')).to.deep.equal(['0', '0.3']);
    for (const [metric, value] of [
      ['provider_usd', '0.945'],
      ['gateway_usd', '0.645'],
      ['difference_usd', '0.3'],
    ])
      expect(await suite.page.getAttribute(`#recon-totals [data-metric="${metric}"]`, 'data-value'), metric).to.equal(
        value,
      );
    expect(await suite.page.textContent('#recon-totals [data-metric="provider_usd"] .card-value')).to.equal('$0.9450');
    const listNote = '#recon-totals [data-metric="gateway_usd"] [data-list-cost]';
    expect(await suite.page.getAttribute(listNote, 'data-list-cost')).to.equal('0.76');
    expect(await suite.page.textContent(listNote)).to.equal('$0.7600 at list price');
    // What the chart draws: the gateway's and the bill's cost per day, in USD.
    const drawn = await suite.page.$eval('#recon-chart', (c) => {
      const chart = (window as any).Chart.getChart(c);
      return { labels: chart.data.labels, data: chart.data.datasets.map((d: any) => [d.label, d.data]) };
    });
    expect(drawn).to.deep.equal({
      labels: ['2025-11-20', '2025-11-21'],
      data: [
        ['Gateway', [0.345, 0.3]],
        ['Provider’s bill', [0.345, 0.6]],
      ],
    });
    expect(await suite.page.$('#recon-discount')).to.equal(null);
    await suite.page.screenshot({ path: resultPath('dashboard-reconciliation.png'), fullPage: true });
  });

  it('one provider: its report with the inferred discount, the gateway at it on the chart, and lines kept by status', async () => {
    await suite.page.selectOption('#recon-provider', 'anthropic');
    await suite.page.waitForSelector('#recon-discount');
    await ready();
    expect(await rows('#recon-runs tbody tr', ['status'])).to.deep.equal([['ok']]);
    expect(await suite.page.getAttribute('#recon-discount', 'data-multiplier')).to.equal('0.7600');
    // Recorded at list price: no list price beside the gateway's cost.
    expect(await suite.page.$('#recon-totals [data-list-cost]')).to.equal(null);
    expect(await suite.page.textContent('#recon-discount pre')).to.equal(
      'pricing:\n  discounts:\n    anthropic: "0.2400"',
    );
    expect(await rows('#recon-lines tbody tr', ['model', 'status'])).to.deep.equal([
      ['claude-haiku-4-5-20251001', 'discounted'],
      ['claude-opus-4-1-20250805', 'discounted'],
      ['claude-sonnet-4-5-20250929', 'discounted'],
      ['claude-new-model', 'unpriced'],
    ]);
    const drawn = await suite.page.$eval('#recon-chart', (c) =>
      (window as any).Chart.getChart(c).data.datasets.map((d: any) => d.data),
    );
    // 2025-11-20: list $22 at 0.76 is $16.72, billed $16.72; 2025-11-21: nothing priced, billed 3 cents.
    expect(drawn).to.deep.equal([
      [16.72, 0],
      [16.72, 0.03],
    ]);
    await suite.page.click('#recon-statuses [data-filter="unpriced"]');
    await suite.page.waitForFunction(() => document.querySelectorAll('#recon-lines tbody tr').length === 1);
    await ready();
    expect(await rows('#recon-lines tbody tr', ['model', 'status'])).to.deep.equal([['claude-new-model', 'unpriced']]);
    expect(await suite.page.getAttribute('#recon-lines tbody tr', 'title')).to.match(/no price for this model/);
  });

  it('fits a phone: no horizontal overflow at 390 px, the lines scroll in their own box', async () => {
    await suite.page.setViewportSize({ width: 390, height: 844 });
    await suite.page.click('#recon-statuses [data-filter="all"]');
    await suite.page.waitForFunction(() => document.querySelectorAll('#recon-lines tbody tr').length === 4);
    expect(await suite.page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
    expect(
      await suite.page.$eval('#recon-lines', (t) => getComputedStyle(t.closest('.table-wrap')!).overflowX),
    ).to.equal('auto');
    await suite.page.setViewportSize({ width: 1280, height: 900 });
  });
});
