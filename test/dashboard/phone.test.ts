/**
 * The dashboard at phone width (390 px) in Debian's Chromium (playwright-core): no view is wider than the screen,
 * and wide tables scroll sideways inside their own box.
 */
import { expect } from 'chai';
import { workspaceWith } from '../helpers/gateway';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { resultPath, useDashboard } from './browser';

const WIDTH = 390;

describe('dashboard at phone width (Chromium, playwright-core)', function () {
  const suite = useDashboard({
    yaml: workspaceWith('{ budgets: [{ period: month, usd: "1000" }] }'),
    seed: async (gw) => {
      const now = Date.now();
      await gw.gateway.store.insertBatch(
        Array.from({ length: 40 }, (_, i) =>
          usageRecord({
            id: `ph-${i}`,
            ts: now - 60_000 - i * 3_600_000,
            keyId: 'test',
            costPico: BigInt(i + 1) * 10_000_000_000n,
            provenance: 'measured',
            inputTokens: 1000 * i,
            outputTokens: 100 * i,
            ...ZERO_BUCKETS,
            latencyMs: 200 + i,
            ttfbMs: 50 + i,
            tags: { agent: `agent-with-a-rather-long-name-${i % 4}`, customer_id: `customer-${i % 7}` },
          }),
        ),
      );
    },
    viewport: { width: WIDTH, height: 844 },
  });

  const overflow = () => suite.page.evaluate(() => document.documentElement.scrollWidth);

  /** The view's table scrolls sideways in its own box, which is no wider than the screen, and the page does not. */
  async function fitsTheScreen(view: string, table: string, wider: boolean): Promise<void> {
    expect(await overflow(), `document.scrollWidth of ${view}`).to.be.at.most(WIDTH);
    const box = await suite.page.$eval(`${table}`, (t) => {
      const wrap = t.closest('.table-wrap') as HTMLElement;
      return { scroll: wrap.scrollWidth, client: wrap.clientWidth, overflowX: getComputedStyle(wrap).overflowX };
    });
    expect(box.overflowX).to.equal('auto');
    expect(box.client).to.be.at.most(WIDTH);
    if (wider) expect(box.scroll, `${view}'s table is wider than its box`).to.be.greaterThan(box.client);
  }

  for (const [view, table] of [
    ['usage', '#groups'],
    ['requests', '#requests'],
    ['latency', '#latency-models'],
    ['budgets', '#budgets'],
    ['keys', '#keys'],
  ] as const) {
    it(`${view}: no horizontal overflow at ${WIDTH} px; its table scrolls in its own box`, async () => {
      await suite.page.click(`a[data-view="${view}"]`);
      await suite.page.waitForSelector(`#view[data-view="${view}"][data-ready="true"]`);
      await suite.page.waitForSelector(table); // the view may be marked ready by its first answers before its table is drawn
      await fitsTheScreen(view, table, view !== 'keys');
      await suite.page.screenshot({ path: resultPath(`dashboard-phone-${view}.png`), fullPage: true });
    });
  }

  it(`statement: no horizontal overflow at ${WIDTH} px, its form and tables in their own boxes`, async () => {
    const page = suite.page;
    await page.click('a[data-view="statement"]');
    await page.waitForSelector('#view[data-view="statement"][data-ready="true"] #statement-pick');
    expect(await overflow(), 'document.scrollWidth of the statement form').to.be.at.most(WIDTH);
    await page.selectOption('#statement-dim', 'customer_id');
    await page.fill('#statement-value', 'customer-1');
    await page.click('#statement-pick button[type=submit]');
    await page.waitForSelector('#statement-days');
    await fitsTheScreen('statement', '#statement-models', false);
    await fitsTheScreen('statement', '#statement-days', true);
    await page.screenshot({ path: resultPath('dashboard-phone-statement.png'), fullPage: true });
  });
});
