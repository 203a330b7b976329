/**
 * Per-tag statements in Debian's Chromium (playwright-core): the spend of one customer over the range by model and
 * by UTC day, the same numbers as the admin API, an unpriced request counted apart (never $0), printable, and
 * downloadable as a CSV whose lines carry the range and the customer.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { adminGet } from '../helpers/admin';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { resultPath, useDashboard } from './browser';

const DAY = 86_400_000;
const now = Date.now();
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('dashboard statements per tag value (Chromium, playwright-core)', function () {
  const suite = useDashboard({
    seed: async (gw) => {
      const priced = { provenance: 'measured', inputTokens: 100, outputTokens: 10, ...ZERO_BUCKETS } as const;
      await gw.gateway.store.insertBatch([
        ...Array.from({ length: 12 }, (_, i) =>
          usageRecord({
            id: `st-${i}`,
            ts: now - 60_000 - (i % 3) * DAY,
            model: i % 2 ? 'gpt-4o' : 'gpt-4o-mini',
            servedModel: i % 2 ? 'gpt-4o' : 'gpt-4o-mini',
            costPico: BigInt(i + 1) * 1_000_000_000n,
            ...priced,
            tags: { customer_id: i % 4 === 3 ? 'globex' : 'acme' },
          }),
        ),
        usageRecord({
          id: 'st-unpriced',
          ts: now - 120_000,
          model: 'mystery-model',
          servedModel: 'mystery-model',
          tags: { customer_id: 'acme' },
        }),
      ]);
    },
  });

  it("shows one customer's spend by model and by UTC day, as the admin API sums it, unpriced apart", async () => {
    const page = suite.page;
    await page.click('a[data-view="statement"]');
    await page.waitForSelector('#statement-pick');
    await page.click('[data-range="7d"]');
    await page.waitForSelector('#view[data-view="statement"][data-ready="true"] #statement-pick');
    await page.selectOption('#statement-dim', 'customer_id');
    await page.fill('#statement-value', 'acme');
    await page.click('#statement-pick button[type=submit]');
    await page.waitForSelector('#statement-days');
    expect(await page.textContent('#statement-title')).to.equal('Statement: customer_id = acme');

    const from = await page.getAttribute('#view', 'data-from');
    const to = await page.getAttribute('#view', 'data-to');
    const q = `from=${from}&to=${to}&filter[customer_id]=acme`;
    const byModel = await adminGet(suite.gw, `/api/usage?group_by=model&${q}`);
    expect(byModel.total.unpriced_count).to.equal(1);
    expect(await page.getAttribute('#statement-total', 'data-cost')).to.equal(byModel.total.cost_usd);
    expect(await page.textContent('#statement-total')).to.include('1 unpriced or not counted');
    const models = await page.$$eval('#statement-models tbody tr', (trs) =>
      trs.map((tr) => [
        (tr as HTMLElement).dataset.row,
        tr.querySelector('[data-col="cost"]')!.getAttribute('data-value'),
      ]),
    );
    expect(models).to.have.deep.members(byModel.rows.map((r: any) => [r.group.model, r.cost_usd ?? '']));
    expect(models.find(([m]) => m === 'mystery-model')![1], 'unknown cost: an empty cell, not $0').to.equal('');

    const byDay = await adminGet(suite.gw, `/api/usage?group_by=model&interval=day&${q}`);
    const days = await page.$$eval('#statement-days tbody tr', (trs) =>
      trs.map((tr) => (tr as HTMLElement).dataset.row),
    );
    expect(days).to.have.deep.members(byDay.rows.map((r: any) => `${r.bucket.slice(0, 10)}|${r.group.model}`));
    expect(days.length).to.be.greaterThan(models.length);
  });

  it('downloads the statement as CSV, its lines carrying the range and the customer, and prints only the statement', async () => {
    const page = suite.page;
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#statement-csv')]);
    const from = Number(await page.getAttribute('#view', 'data-from'));
    const to = Number(await page.getAttribute('#view', 'data-to'));
    expect(download.suggestedFilename()).to.equal(`statement-usage-model-day-${day(from)}-to-${day(to - 1)}.csv`);
    const [header, ...lines] = readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\r\n')
      .map((l) => l.split(','));
    expect(header.slice(0, 2)).to.deep.equal(['model', 'bucket']);
    expect(header.slice(-3)).to.deep.equal(['range_from', 'range_to', 'filter[customer_id]']);
    for (const line of lines)
      expect(line.slice(-3)).to.deep.equal([new Date(from).toISOString(), new Date(to).toISOString(), 'acme']);
    const cost = header.indexOf('cost_usd');
    const sum = lines.reduce((s, l) => s + Number(l[cost] || 0), 0);
    expect(sum).to.be.closeTo(Number(await page.getAttribute('#statement-total', 'data-cost')), 1e-9);

    await page.emulateMedia({ media: 'print' });
    expect(await page.isVisible('.topbar')).to.equal(false);
    expect(await page.isVisible('#statement-print')).to.equal(false);
    expect(await page.isVisible('#statement-days')).to.equal(true);
    await page.screenshot({ path: resultPath('dashboard-statement-print.png'), fullPage: true });
    await page.emulateMedia({ media: 'screen' });
  });
});
