/**
 * GET /api/budgets with a per-tag budget whose tag has ~20,000 values this period (clients choose them): each page
 * holds its share in order, every value once, with the spend its records hold, and the proxy's thread handles the
 * page alone (the grouping is paged on the admin reader thread, the values the limit store met are read from the
 * cursor on). The proxied p99, idle and while the pages are read, is printed for the report, not asserted.
 */
import { expect } from 'chai';
import { codePointCompare } from '../../plugin-kit/code-point-order';
import { formatUsd } from '../../pricing/money';
import { adminGet } from '../helpers/admin';
import { startTestGateway, type TestGateway, chatThrough } from '../helpers/gateway';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { TestUpstream } from '../helpers/upstream';

const VALUES = 20_000;
const PAGE = 1000;

async function proxied(gw: TestGateway, customer: string): Promise<number> {
  const started = performance.now();
  const res = await chatThrough(gw, {
    // JSON's \u escapes carry any value in an ASCII header.
    'x-gateway-metadata': JSON.stringify({ customer_id: customer }).replace(/[^\x20-\x7e]/g, escapeUnit),
  });
  await res.body.text();
  expect(res.statusCode).to.equal(200);
  return performance.now() - started;
}

/** Every page of GET /api/budgets, `limit` at a time. */
async function allPages(gw: TestGateway, limit: number): Promise<any[][]> {
  const pages: any[][] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = await adminGet(gw, `/api/budgets?limit=${limit}${q}`);
    pages.push(page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return pages;
}

const escapeUnit = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1];

describe('GET /api/budgets with 20,000 per-tag values: paged, the proxy thread doing only the page', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  const cost = (i: number) => BigInt(1_000_000 + i);
  const customer = (i: number) => `cust-${String(i).padStart(5, '0')}`;

  before(async function () {
    this.timeout(120_000);
    await upstream.start();
    gw = await startTestGateway(
      upstream.url,
      `admin: { query_timeout_ms: 60000 }
workspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { budgets: [{ period: month, usd: "1000", per_tag: customer_id }, { period: month, usd: "5000" }] } }]`,
    );
    const now = Date.now();
    const records = Array.from({ length: VALUES }, (_, i) =>
      usageRecord({
        id: `bp-${i}`,
        ts: now - 1000,
        workspaceId: 'default',
        keyId: 'test',
        model: 'gpt-4o-mini',
        servedModel: 'gpt-4o-mini',
        inputTokens: 10,
        outputTokens: 5,
        ...ZERO_BUCKETS,
        costPico: cost(i),
        provenance: 'measured',
        priceVersion: 'test',
        latencyMs: 10,
        ttfbMs: 5,
        tags: { customer_id: customer(i) },
      }),
    );
    for (let i = 0; i < records.length; i += 5000) await gw.gateway.store.insertBatch(records.slice(i, i + 5000));
  });
  after(async function () {
    this.timeout(180_000);
    await gw?.stop();
    await upstream.stop();
  });

  it('every value once, in code-point order, each with its recorded spend; values met only by requests too', async function () {
    this.timeout(120_000);
    // Values met through the proxy: the limit store has them at once, whether or not their records are written.
    const met = ['cust-05000a', 'cust-\u{1F600}', 'cust-\uE000'];
    for (const value of met) await proxied(gw, value);
    const started = performance.now();
    const pages = await allPages(gw, PAGE);
    console.log(`      ${pages.length} pages of ${PAGE} read in ${(performance.now() - started).toFixed(0)} ms`);
    const listed = pages.flat();
    expect(pages.slice(0, -1).every((p) => p.length === PAGE)).to.equal(true);
    expect(listed).to.have.length(VALUES + met.length + 1);
    expect(listed[listed.length - 1]).to.include({ scope: 'workspace', id: 'yaml:default:1' });
    const perTag = listed.slice(0, -1);
    const scopes = perTag.map((b) => b.scope.slice('customer_id='.length));
    expect(new Set(scopes).size).to.equal(scopes.length);
    expect(scopes).to.deep.equal([...scopes].sort(codePointCompare));
    expect(scopes).to.include.members(met);
    for (const i of [0, 4_999, 5_000, 12_345, VALUES - 1]) {
      const b = perTag.find((x) => x.scope === `customer_id=${customer(i)}`);
      expect(b, customer(i)).to.include({ spent_usd: formatUsd(cost(i)), id: 'yaml:default:0', limit_usd: '1000' });
    }
    const afterSeeded = scopes.indexOf(customer(5_000)) + 1;
    expect(scopes[afterSeeded]).to.equal('cust-05000a');
    expect(scopes.slice(-2)).to.deep.equal(['cust-\uE000', 'cust-\u{1F600}']);
  });

  it('proxied p99 idle and while every page is read (printed for the report)', async function () {
    this.timeout(300_000);
    const idle: number[] = [];
    for (let i = 0; i < 300; i++) idle.push(await proxied(gw, `p-${i % 10}`));
    const during: number[] = [];
    let reading = true;
    const paging = (async () => {
      let walks = 0;
      while (reading) {
        await allPages(gw, PAGE);
        walks++;
      }
      return walks;
    })();
    for (let i = 0; i < 300; i++) during.push(await proxied(gw, `p-${i % 10}`));
    reading = false;
    const walks = await paging;
    expect(walks).to.be.above(0);
    console.log(
      `      proxied p99 over 300 sequential requests: ${p99(idle).toFixed(1)} ms idle, ${p99(during).toFixed(1)} ms ` +
        `while ${walks} full walk(s) of ${Math.ceil(VALUES / PAGE)} budget pages ran (max ${Math.max(...during).toFixed(1)} ms)`,
    );
  });
});
