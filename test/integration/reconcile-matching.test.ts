/**
 * Reconciliation end to end on a real SQLite store: usage records of the gateway, a loopback server answering like
 * the providers' admin APIs (payloads built from the API references, test/fixtures/reconcile), and the run stored
 * with its report. Each case is one way a bill and the gateway agree or differ.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseUsd } from '../../pricing/money';
import { runReconciliation, type BillSource, type RunSettings } from '../../reconcile/run';
import type { ReconciliationReport } from '../../reconcile/report';
import { openStore } from '../../storage';
import type { UsageStore } from '../../storage/store';
import { gatewayRecord as record } from '../helpers/gateway-record';
import { anthropicCostReport, jsonReply, providerAdminApi } from '../helpers/provider-admin-api';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const D20 = Date.UTC(2025, 10, 20);
const D21 = D20 + DAY;
const RANGE = { from: D20, to: D20 + 2 * DAY };
/** Ten days after: both days are final (outside the 7-day restatement window). */
const LATER = D20 + 10 * DAY;
const SETTINGS = (provider: string): RunSettings => ({ provider, tolerance: '0.005', restateDays: 7, scopes: {} });

const json = jsonReply;

/** Records priced with pricing.discounts.anthropic at 0.24: cost 0.76 of a list cost of $6, $1 and $15. */
const DISCOUNTED_AT_024 = () =>
  (
    [
      ['claude-sonnet-4-5-20250929', { input: 1_000_000, output: 100_000 }, '6', '4.56'],
      ['claude-haiku-4-5-20251001', { input: 1_000_000, output: 0 }, '1', '0.76'],
      ['claude-opus-4-1-20250805', { input: 1_000_000, output: 0 }, '15', '11.4'],
    ] as const
  ).map(([model, tokens, list, cost]) => ({
    ...record('anthropic', model, D20, tokens, cost),
    listCostPico: parseUsd(list),
  }));

/** An Anthropic cost report page of one day: [model, cents] per line. */
const anthropicCosts = (day: number, lines: [string, string][]) =>
  anthropicCostReport(lines.map(([model, cents]) => [day, model, cents]));

/** An Anthropic admin API that bills these costs of one day ([model, cents] per line) and reports no usage. */
const billsOnly = (day: number, lines: () => [string, string][]) => (req: { url?: string }) =>
  new URL(req.url!, 'http://x').pathname.endsWith('/cost_report')
    ? json(anthropicCosts(day, lines()))
    : json({ data: [], has_more: false, next_page: null });

describe('reconciliation: matching the gateway against the bill', () => {
  const upstream = new TestUpstream();
  let dir: string;
  let store: UsageStore;
  let openai: BillSource;
  let anthropic: BillSource;
  let stores = 0;

  async function run(source: BillSource, provider: string, now = LATER): Promise<ReconciliationReport> {
    const outcome = await runReconciliation(
      { queryUsage: (q) => store.queryUsage(q), runs: store.reconciliationRuns!(), now: () => now },
      source,
      RANGE,
      SETTINGS(provider),
    );
    expect(outcome.error).to.equal(null);
    return outcome.report!;
  }

  const openaiApi = providerAdminApi;

  before(async () => {
    await upstream.start();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-reconcile-'));
    openai = { kind: 'openai', baseUrl: `${upstream.url}/openai/v1`, adminKey: 'sk-admin-test-openai' };
    anthropic = { kind: 'anthropic', baseUrl: `${upstream.url}/anthropic/v1`, adminKey: 'sk-ant-admin-test' };
  });
  beforeEach(async () => {
    upstream.reset();
    store = await openStore(`sqlite:${join(dir, `t${++stores}.db`)}`, { writerThread: false });
    await store.migrate();
  });
  afterEach(() => store.close());
  after(async () => {
    await upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exact agreement: every day x model matches to the pico-dollar, drift 0', async () => {
    upstream.respondWith(openaiApi);
    await store.insertBatch([
      record('openai', 'gpt-4o-mini-2024-07-18', D20, { input: 600_000, cacheRead: 200_000, output: 100_000 }, '0.165'),
      record('openai', 'gpt-4o-mini-2024-07-18', D20, { input: 400_000, output: 200_000 }, '0.18'),
      record('openai', 'gpt-4o-mini-2024-07-18', D21, { input: 2_000_000, output: 500_000 }, '0.6'),
    ]);
    const report = await run(openai, 'openai');
    expect(
      report.lines.map((l) => [l.day, l.model, l.status, l.gateway?.cost_usd, l.provider?.cost_usd]),
    ).to.deep.equal([
      ['2025-11-20', 'gpt-4o-mini-2024-07-18', 'match', '0.345', '0.345'],
      ['2025-11-21', 'gpt-4o-mini-2024-07-18', 'match', '0.6', '0.6'],
    ]);
    expect(report.totals).to.deep.equal({
      gateway_usd: '0.945',
      gateway_list_usd: '0.945',
      provider_usd: '0.945',
      difference_usd: '0',
      drift: '0.000000',
    });
  });

  it('traffic that bypassed the gateway: the provider counted more tokens than the gateway received', async () => {
    upstream.respondWith(openaiApi);
    await store.insertBatch([
      record(
        'openai',
        'gpt-4o-mini-2024-07-18',
        D20,
        { input: 1_000_000, cacheRead: 200_000, output: 300_000 },
        '0.345',
      ),
      record('openai', 'gpt-4o-mini-2024-07-18', D21, { input: 1_000_000, output: 250_000 }, '0.3'),
    ]);
    const report = await run(openai, 'openai');
    const bypass = report.lines[1];
    expect(bypass.status).to.equal('not_seen_by_gateway');
    expect(bypass.difference_usd).to.equal('0.3');
    expect(bypass.note).to.include('did not go through the gateway');
    expect(report.worst_day).to.deep.equal({ day: '2025-11-21', drift: '0.500000' });
  });

  it('a stale catalog price: same tokens, the bill implies 1.25 times the price the gateway used', async () => {
    upstream.respondWith(providerAdminApi);
    await store.insertBatch([
      record(
        'anthropic',
        'claude-sonnet-4-5-20250929',
        D20,
        { input: 1_000_000, cacheRead: 500_000, cacheWrite: 100_000, output: 200_000 },
        '5.22',
      ),
    ]);
    const report = await run(anthropic, 'anthropic');
    expect(report.lines).to.have.length(1);
    expect(report.lines[0]).to.include({ status: 'priced_differently', ratio: '1.250000', difference_usd: '1.305' });
    expect(report.discount).to.equal(null);
  });

  it('a negotiated discount: a steady 0.76 of list price across models is inferred and applied', async () => {
    upstream.respondWith((req) => {
      const url = new URL(req.url, 'http://x');
      if (url.pathname.endsWith('/usage_report/messages')) return json({ data: [], has_more: false, next_page: null });
      if (url.pathname.endsWith('/cost_report'))
        return json(
          anthropicCosts(D20, [
            ['claude-sonnet-4-5-20250929', '456'],
            ['claude-haiku-4-5-20251001', '76'],
            ['claude-opus-4-1-20250805', '1140'],
          ]),
        );
      return undefined;
    });
    await store.insertBatch([
      record('anthropic', 'claude-sonnet-4-5-20250929', D20, { input: 1_000_000, output: 100_000 }, '6'),
      record('anthropic', 'claude-haiku-4-5-20251001', D20, { input: 1_000_000, output: 0 }, '1'),
      record('anthropic', 'claude-opus-4-1-20250805', D20, { input: 1_000_000, output: 0 }, '15'),
    ]);
    const report = await run(anthropic, 'anthropic');
    expect(report.discount).to.deep.equal({
      multiplier: '0.7600',
      models: ['claude-haiku-4-5-20251001', 'claude-opus-4-1-20250805', 'claude-sonnet-4-5-20250929'],
      override: 'pricing:\n  discounts:\n    anthropic: "0.2400"',
    });
    expect(report.lines.map((l) => [l.model, l.status, l.gateway?.cost_usd, l.expected_usd])).to.deep.equal([
      ['claude-haiku-4-5-20251001', 'discounted', '1', '0.76'],
      ['claude-opus-4-1-20250805', 'discounted', '15', '11.4'],
      ['claude-sonnet-4-5-20250929', 'discounted', '6', '4.56'],
    ]);
    expect(report.totals.drift).to.equal('0.000000');
  });

  it('a configured discount: a bill of 0.76 of list price with pricing.discounts at 0.24 is a match', async () => {
    upstream.respondWith(
      billsOnly(D20, () => [
        ['claude-sonnet-4-5-20250929', '456'],
        ['claude-haiku-4-5-20251001', '76'],
        ['claude-opus-4-1-20250805', '1140'],
      ]),
    );
    await store.insertBatch(DISCOUNTED_AT_024());
    const report = await run(anthropic, 'anthropic');
    expect(report.discount).to.equal(null);
    expect(report.lines.map((l) => [l.model, l.status, l.gateway?.list_cost_usd, l.gateway?.cost_usd])).to.deep.equal([
      ['claude-haiku-4-5-20251001', 'match', '1', '0.76'],
      ['claude-opus-4-1-20250805', 'match', '15', '11.4'],
      ['claude-sonnet-4-5-20250929', 'match', '6', '4.56'],
    ]);
    expect(report.totals).to.include({
      gateway_usd: '16.72',
      gateway_list_usd: '22',
      difference_usd: '0',
      drift: '0.000000',
    });
  });

  it('a configured discount short of the real one: the multiplier is inferred on list price, not on the cost', async () => {
    upstream.respondWith(
      billsOnly(D20, () => [
        ['claude-sonnet-4-5-20250929', '420'],
        ['claude-haiku-4-5-20251001', '70'],
        ['claude-opus-4-1-20250805', '1050'],
      ]),
    );
    await store.insertBatch(DISCOUNTED_AT_024());
    const report = await run(anthropic, 'anthropic');
    expect(report.discount).to.include({
      multiplier: '0.7000',
      override: 'pricing:\n  discounts:\n    anthropic: "0.3000"',
    });
    expect(report.lines.map((l) => [l.model, l.status, l.gateway?.cost_usd, l.expected_usd])).to.deep.equal([
      ['claude-haiku-4-5-20251001', 'discounted', '0.76', '0.7'],
      ['claude-opus-4-1-20250805', 'discounted', '11.4', '10.5'],
      ['claude-sonnet-4-5-20250929', 'discounted', '4.56', '4.2'],
    ]);
    expect(report.lines[0].note).to.include("the gateway's list cost $1 at the account's discount of 0.7000");
    expect(report.totals.drift).to.equal('0.000000');
  });

  it('an unpriced model: the gateway could not price its records, so the bill is not compared as a difference', async () => {
    upstream.respondWith(billsOnly(D20, () => [['claude-new-model', '250']]));
    await store.insertBatch([record('anthropic', 'claude-new-model', D20, { input: 500_000, output: 10_000 }, null)]);
    const report = await run(anthropic, 'anthropic');
    expect(report.lines[0]).to.include({ status: 'unpriced', difference_usd: '2.5' });
    expect(report.lines[0].gateway).to.include({ unpriced: 1, cost_usd: '0' });
  });

  it('a restated day: not final inside the window, matched once the provider restated it', async () => {
    let restated = false;
    upstream.respondWith(billsOnly(D21, () => [['claude-haiku-4-5-20251001', restated ? '100' : '60']]));
    await store.insertBatch([
      record('anthropic', 'claude-haiku-4-5-20251001', D21, { input: 1_000_000, output: 0 }, '1'),
    ]);
    const early = await run(anthropic, 'anthropic', D21 + 2 * DAY);
    expect(early.lines[0].status).to.equal('not_final');
    expect(early.totals.drift).to.equal(null);
    restated = true;
    const later = await run(anthropic, 'anthropic');
    expect(later.lines[0].status).to.equal('match');
    const runs = await store.reconciliationRuns!().list(10, null);
    expect(runs.map((r) => [r.provider, r.status, r.drift])).to.deep.equal([
      ['anthropic', 'ok', '0.000000'],
      ['anthropic', 'ok', null],
    ]);
  });

  it('an API error mid-run: the run is stored as failed with the error and no report, the key nowhere', async () => {
    upstream.respondWith((req) =>
      new URL(req.url, 'http://x').pathname.endsWith('/organization/costs')
        ? json({ error: { message: 'The server had an error while processing your request.' } }, 500)
        : openaiApi(req),
    );
    const outcome = await runReconciliation(
      { queryUsage: (q) => store.queryUsage(q), runs: store.reconciliationRuns!(), now: () => LATER },
      openai,
      RANGE,
      SETTINGS('openai'),
    );
    expect(outcome.error).to.equal('OpenAI costs: HTTP 500: The server had an error while processing your request.');
    const stored = await store.reconciliationRuns!().get(outcome.id!);
    expect(stored).to.include({ status: 'failed', report: null, source: 'api', error: outcome.error });
    expect(stored!.pages).to.deep.equal({});
    expect(JSON.stringify(stored)).to.not.include('sk-admin-test-openai');
  });
});
