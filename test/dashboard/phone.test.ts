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
      expect(await overflow(), `document.scrollWidth of ${view}`).to.be.at.most(WIDTH);
      const box = await suite.page.$eval(`${table}`, (t) => {
        const wrap = t.closest('.table-wrap') as HTMLElement;
        return { scroll: wrap.scrollWidth, client: wrap.clientWidth, overflowX: getComputedStyle(wrap).overflowX };
      });
      expect(box.overflowX).to.equal('auto');
      expect(box.client).to.be.at.most(WIDTH);
      if (view !== 'keys') expect(box.scroll, `${view}'s table is wider than its box`).to.be.greaterThan(box.client);
      await suite.page.screenshot({ path: resultPath(`dashboard-phone-${view}.png`), fullPage: true });
    });
  }
});
