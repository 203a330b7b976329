/**
 * The bill readers against a loopback server that answers like OpenAI's and Anthropic's admin APIs with the
 * payloads in test/fixtures/reconcile (built from the API references, see SOURCES.md): every page is read, dollars
 * and cents come out as the same pico-USD, a rate limit is waited out, and an error mid-run fails the run with the
 * endpoint and status named and the admin key nowhere in it.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { readAnthropicBill } from '../../reconcile/anthropic-reader';
import { mergeBillLines } from '../../reconcile/bill';
import { readCsvExport } from '../../reconcile/csv-export';
import { DEFAULT_FETCH, ReconcileFetchError } from '../../reconcile/fetch-pages';
import { readOpenAiBill } from '../../reconcile/openai-reader';
import { fixturePath } from '../helpers/fixtures';
import { providerAdminApi } from '../helpers/provider-admin-api';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const FROM = Date.UTC(2025, 10, 20);
const RANGE = { from: FROM, to: FROM + 2 * DAY };
const OPENAI_KEY = 'sk-admin-reconcile-test-0123456789';
const ANTHROPIC_KEY = 'sk-ant-admin01-reconcile-test-0123456789';
const FAST = { ...DEFAULT_FETCH, timeoutMs: 2000, maxRetryWaitMs: 2000 };

const adminApi = providerAdminApi;

describe('reconciliation: reading the providers’ bills', () => {
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() => {
    upstream.reset();
    upstream.respondWith(adminApi);
  });

  it('reads every page of OpenAI’s usage and costs, dollars as exact pico-USD, cached input apart', async () => {
    const bill = await readOpenAiBill(`${upstream.url}/openai/v1`, OPENAI_KEY, RANGE, FAST);
    expect(bill.pages).to.deep.equal({ 'usage/completions': 2, costs: 1 });
    const usageCalls = upstream.received.filter((r) => r.url.includes('/usage/completions'));
    expect(usageCalls.map((r) => new URL(r.url, 'http://x').searchParams.get('page'))).to.deep.equal([
      null,
      'page_AAAAAGk-1dE',
    ]);
    const first = new URL(usageCalls[0].url, 'http://x').searchParams;
    expect(first.get('start_time')).to.equal(String(FROM / 1000));
    expect(first.getAll('group_by')).to.deep.equal(['model', 'project_id']);
    expect(usageCalls[0].headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
    expect(mergeBillLines(bill.lines)).to.deep.equal([
      {
        day: '2025-11-20',
        provider: 'openai',
        model: 'gpt-4o-mini-2024-07-18',
        scope: 'proj_tollgate',
        requests: 1000,
        tokens: { input: 1_000_000, cacheRead: 200_000, cacheWrite: 0, output: 300_000 },
        costPico: 345_000_000_000n,
      },
      {
        day: '2025-11-21',
        provider: 'openai',
        model: 'gpt-4o-mini-2024-07-18',
        scope: 'proj_tollgate',
        requests: 1500,
        tokens: { input: 2_000_000, cacheRead: 0, cacheWrite: 0, output: 500_000 },
        costPico: 600_000_000_000n,
      },
    ]);
  });

  it('reads Anthropic’s usage and both cost pages, cents as decimal strings becoming dollars once', async () => {
    const bill = await readAnthropicBill(`${upstream.url}/anthropic/v1`, ANTHROPIC_KEY, RANGE, FAST);
    expect(bill.pages).to.deep.equal({ 'usage_report/messages': 1, cost_report: 2 });
    const call = upstream.received[0];
    expect(call.headers['x-api-key']).to.equal(ANTHROPIC_KEY);
    expect(call.headers['anthropic-version']).to.equal('2023-06-01');
    expect(new URL(call.url, 'http://x').searchParams.get('starting_at')).to.equal('2025-11-20T00:00:00.000Z');
    // 300.00 + 15.00 + 37.5 + 300.00 cents = $6.525, the list price of the tokens in the usage report.
    expect(mergeBillLines(bill.lines)).to.deep.equal([
      {
        day: '2025-11-20',
        provider: 'anthropic',
        model: 'claude-sonnet-4-5-20250929',
        scope: null,
        requests: null,
        tokens: { input: 1_000_000, cacheRead: 500_000, cacheWrite: 100_000, output: 200_000 },
        costPico: 6_525_000_000_000n,
      },
    ]);
  });

  it('waits out a 429 for as long as Retry-After says, then goes on', async () => {
    let refused = 0;
    upstream.respondWith((req) => {
      if (req.url.includes('/organization/costs') && refused++ === 0)
        return { status: 429, headers: { 'retry-after': '1' }, body: Buffer.from('{"error":{"message":"slow down"}}') };
      return adminApi(req);
    });
    const started = Date.now();
    const bill = await readOpenAiBill(`${upstream.url}/openai/v1`, OPENAI_KEY, RANGE, FAST);
    expect(Date.now() - started).to.be.at.least(950);
    expect(bill.pages.costs).to.equal(1);
    expect(upstream.received.filter((r) => r.url.includes('/organization/costs'))).to.have.length(2);
  });

  it('fails the run on an error mid-way, naming the endpoint and status but never the key', async () => {
    upstream.respondWith((req) =>
      new URL(req.url, 'http://x').searchParams.get('page')
        ? {
            status: 500,
            headers: { 'content-type': 'application/json' },
            body: Buffer.from('{"type":"error","error":{"type":"api_error","message":"Internal server error"}}'),
          }
        : adminApi(req),
    );
    let failure: unknown;
    try {
      await readAnthropicBill(`${upstream.url}/anthropic/v1`, ANTHROPIC_KEY, RANGE, FAST);
    } catch (err) {
      failure = err;
    }
    expect(failure).to.be.instanceOf(ReconcileFetchError);
    expect((failure as ReconcileFetchError).status).to.equal(500);
    expect((failure as Error).message).to.equal('Anthropic cost_report: HTTP 500: Internal server error');
    expect((failure as Error).message).to.not.include(ANTHROPIC_KEY);
  });

  it('gives up on a provider that does not answer within the time-out', async () => {
    upstream.respondWith((req) => ({ ...adminApi(req)!, headerDelayMs: 1500 }));
    const err = await readOpenAiBill(`${upstream.url}/openai/v1`, OPENAI_KEY, RANGE, { ...FAST, timeoutMs: 300 }).catch(
      (e: Error) => e,
    );
    expect(err).to.be.instanceOf(ReconcileFetchError);
    expect((err as Error).message).to.match(/^OpenAI usage\/completions: no answer/);
  });

  it('reads a console CSV export: quoted fields, thousands separators and a dollar sign', () => {
    const lines = readCsvExport(readFileSync(fixturePath('reconcile/console_export.csv'), 'utf8'), 'anthropic');
    expect(lines.map((l) => [l.day, l.model, l.scope, l.tokens, l.costPico])).to.deep.equal([
      [
        '2025-11-20',
        'claude-sonnet-4-5-20250929',
        'Default',
        { input: 1_000_000, cacheRead: 500_000, cacheWrite: 100_000, output: 200_000 },
        6_525_000_000_000n,
      ],
      [
        '2025-11-21',
        'claude-haiku-4-5-20251001',
        'Default',
        { input: 1_000_000, cacheRead: 0, cacheWrite: 0, output: 100_000 },
        1_500_000_000_000n,
      ],
    ]);
  });

  it('refuses a CSV without a cost column, naming what it read', () => {
    expect(() => readCsvExport('Date,Model,Tokens\n2025-11-20,gpt-4o,5\n', 'openai')).to.throw(
      'the header has no column for a cost (read: Date, Model, Tokens)',
    );
  });
});
