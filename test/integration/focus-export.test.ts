/**
 * GET /api/usage.focus.csv: the FOCUS 1.2 export of a range, read on the admin reader thread a few days at a time,
 * against a real gateway and its SQLite store.
 */
import { expect } from 'chai';
import { request } from 'undici';
import type { UsageRecord } from '../../records/usage-record';
import { FOCUS_COLUMNS } from '../../admin/dashboard/focus';
import { csvRows } from '../helpers/csv';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const USD = 1_000_000_000_000n;

/** The columns FOCUS 1.2 requires of every dataset (conditional ones that apply to metered usage are checked apart). */
const FOCUS_MANDATORY = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ContractedCost',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ServiceCategory',
  'ServiceName',
];

const record = (id: string, ts: number, costPico: bigint | null, model: string, customer: string): UsageRecord =>
  usageRecord({
    id,
    ts,
    costPico,
    model,
    servedModel: model,
    provenance: 'measured',
    workspaceId: 'focus',
    keyId: 'test',
    inputTokens: 100,
    outputTokens: 20,
    ...ZERO_BUCKETS,
    tags: { customer_id: customer },
  });

async function get(gw: TestGateway, path: string) {
  const res = await request(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

describe('FOCUS export: GET /api/usage.focus.csv', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  // Two UTC days ago at midnight: the range starts at 06:00 that day and ends at noon the next.
  const day1 = Math.floor(Date.now() / DAY) * DAY - 2 * DAY;
  const from = day1 + 6 * HOUR;
  const to = day1 + DAY + 12 * HOUR;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(
      upstream.url,
      'workspaces: [{ id: default }, { id: focus, name: "Focus team", keys: [{ id: test, key: "${GATEWAY_KEY}" }] }]',
    );
    await gw.gateway.store.insertBatch([
      record('f-1', day1 + 10 * HOUR, (3n * USD) / 2n, 'gpt-4o-mini', 'acme'),
      record('f-2', day1 + 11 * HOUR, USD / 2n, 'gpt-4o-mini', 'acme'),
      record('f-3', day1 + 3 * HOUR, USD, 'gpt-4o-mini', 'acme'), // before the range
      record('f-4', day1 + DAY + 3 * HOUR, null, 'gpt-4o', 'globex'), // unpriced
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('writes one charge row per day and group with the FOCUS columns, charge periods cut to the range, unknown cost left empty', async () => {
    const res = await get(gw, `/api/usage.focus.csv?from=${from}&to=${to}&filter[workspace]=focus&tag=customer_id`);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/csv/);
    const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expect(res.headers['content-disposition']).to.equal(
      `attachment; filename="focus-${date(from)}-to-${date(to - 1)}.csv"`,
    );
    const [header, ...rows] = csvRows(res.text);
    expect(header).to.include.members(FOCUS_MANDATORY);
    expect(header).to.deep.equal([...FOCUS_COLUMNS, 'x_tag_customer_id']);
    const byCustomer = Object.fromEntries(
      rows.map((r) => [r[header.indexOf('x_tag_customer_id')], Object.fromEntries(header.map((h, i) => [h, r[i]]))]),
    );
    expect(Object.keys(byCustomer)).to.have.members(['acme', 'globex']);

    const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    const month = new Date(from);
    expect(byCustomer.acme).to.include({
      BilledCost: '2',
      EffectiveCost: '2',
      ListCost: '2',
      ContractedCost: '2',
      BillingCurrency: 'USD',
      ChargeCategory: 'Usage',
      ChargeClass: '',
      ChargePeriodStart: iso(from),
      ChargePeriodEnd: iso(day1 + DAY),
      BillingPeriodStart: iso(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1)),
      ProviderName: 'openai',
      ServiceName: 'gpt-4o-mini',
      ServiceCategory: 'AI and Machine Learning',
      ResourceId: 'test',
      SubAccountId: 'focus',
      SubAccountName: 'Focus team',
      PricingQuantity: '240',
      PricingUnit: 'Tokens',
      Tags: '{"customer_id":"acme"}',
      x_CostStatus: 'known',
      x_Requests: '2',
    });
    expect(byCustomer.globex).to.include({
      BilledCost: '',
      EffectiveCost: '',
      ListCost: '',
      x_CostStatus: 'unknown',
      x_UnpricedRequests: '1',
      ChargePeriodStart: iso(day1 + DAY),
      ChargePeriodEnd: iso(to),
      ServiceName: 'gpt-4o',
    });
  });

  it('refuses a built-in named as a tag, or too many tags, in the gateway error shape', async () => {
    for (const q of ['tag=provider', 'tag=a&tag=b&tag=c&tag=d']) {
      const res = await get(gw, `/api/usage.focus.csv?from=${from}&to=${to}&${q}`);
      expect(res.status, q).to.equal(400);
      expect(JSON.parse(res.text).error).to.include({ param: 'tag' });
    }
  });

  it('a range of many days answers every day, chunk after chunk', async () => {
    const res = await get(gw, `/api/usage.focus.csv?from=${day1 - 40 * DAY}&to=${to}&filter[workspace]=focus`);
    expect(res.status, res.text).to.equal(200);
    const [header, ...rows] = csvRows(res.text);
    const starts = rows.map((r) => r[header.indexOf('ChargePeriodStart')]).sort();
    expect(starts).to.deep.equal([
      new Date(day1).toISOString().replace('.000Z', 'Z'),
      new Date(day1 + DAY).toISOString().replace('.000Z', 'Z'),
    ]);
    const requests = rows.reduce((a, r) => a + Number(r[header.indexOf('x_Requests')]), 0);
    expect(requests).to.equal(4);
  });
});
