/**
 * The dashboard's time presets in Debian's Chromium (playwright-core): calendar presets on UTC boundaries, the range
 * shown in UTC, and "n/a" instead of a percentage when the previous period holds too little to compare with.
 */
import { expect } from 'chai';
import { usageRecord, ZERO_BUCKETS } from '../helpers/records';
import { resultPath, useDashboard } from './browser';

const DAY = 86_400_000;

describe('dashboard time presets in a real browser (Chromium, playwright-core)', function () {
  const now = Date.now();

  const suite = useDashboard({
    seed: async (gw) => {
      // 30 priced requests over the last three days, one a week before: the previous 7 days hold too little.
      const records = Array.from({ length: 30 }, (_, i) =>
        usageRecord({
          id: `p-${i}`,
          ts: now - (i % 3) * DAY - 60_000,
          costPico: 1_000_000_000n,
          provenance: 'measured',
          inputTokens: 10,
          outputTokens: 5,
          ...ZERO_BUCKETS,
          tags: { agent: 'presets' },
        }),
      );
      records.push(usageRecord({ id: 'p-old', ts: now - 8 * DAY, costPico: 1_000_000n, provenance: 'measured' }));
      await gw.gateway.store.insertBatch(records);
    },
  });

  const choose = async (preset: string) => {
    await suite.page.click(`[data-range="${preset}"]`);
    await suite.page.waitForSelector(`[data-range="${preset}"].active`);
    await suite.page.waitForSelector('#view[data-view="usage"][data-ready="true"]');
    return {
      from: Number(await suite.page.getAttribute('#view', 'data-from')),
      to: Number(await suite.page.getAttribute('#view', 'data-to')),
      shown: await suite.page.textContent('#range-shown'),
    };
  };
  const utc = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

  it('month to date, last month, today and yesterday start and end on UTC boundaries, and the range is shown in UTC', async () => {
    const d = new Date(Date.now());
    const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const mtd = await choose('mtd');
    expect(mtd.from).to.equal(monthStart);
    expect(mtd.shown).to.match(new RegExp(`^${utc(monthStart)} → .* UTC$`));
    const last = await choose('last-month');
    expect([last.from, last.to]).to.deep.equal([Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1), monthStart]);
    const midnight = Math.floor(Date.now() / DAY) * DAY;
    expect((await choose('today')).from).to.equal(midnight);
    const yesterday = await choose('yesterday');
    expect([yesterday.from, yesterday.to]).to.deep.equal([midnight - DAY, midnight]);
    expect(yesterday.shown).to.equal(`${utc(midnight - DAY)} → ${utc(midnight)} UTC`);
    await suite.page.screenshot({ path: resultPath('dashboard-presets.png') });
  });

  it('with too little in the previous period the deltas say n/a, never an absurd percentage', async () => {
    await choose('7d');
    const deltas = await suite.page.$$eval('#overview .card-sub[data-delta]', (els) =>
      els.map((e) => (e as HTMLElement).dataset.delta),
    );
    expect(deltas).to.include('n/a');
    expect(deltas.filter((x) => x && x.endsWith('%'))).to.deep.equal([]);
    expect(await suite.page.textContent('#overview [data-metric="cost"]')).to.include('n/a vs previous 7 days');
  });

  it('a range without requests says so: no 0 % share, no delta, no chart of zeros', async () => {
    const input = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    await suite.page.click('[data-range="custom"]');
    await suite.page.fill('#range-from', input(now - 30 * DAY));
    await suite.page.fill('#range-to', input(now - 20 * DAY));
    await suite.page.click('#custom-range button[type=submit]');
    await suite.page.waitForSelector('[data-range="custom"].active');
    await suite.page.waitForSelector('#view[data-view="usage"][data-ready="true"] #overview [data-metric="requests"]');
    expect(await suite.page.getAttribute('#overview [data-metric="requests"]', 'data-value')).to.equal('0');
    expect(await suite.page.textContent('#overview [data-metric="flagged"] .card-value')).to.equal('—');
    const deltas = await suite.page.$$eval('#overview .card-sub[data-delta]', (els) =>
      els.map((e) => (e as HTMLElement).dataset.delta),
    );
    expect(
      deltas.filter((x) => x && x.endsWith('%')),
      'no percentage of nothing',
    ).to.deep.equal([]);
    expect(await suite.page.textContent('.chart-box')).to.include('No requests in this range');
    expect(await suite.page.textContent('.table-wrap')).to.include('No requests in this range');
    await choose('7d');
  });

  it('marks the buckets the range covers only in part, and says every time is UTC', async () => {
    const week = await choose('7d');
    const partial = JSON.parse((await suite.page.getAttribute('.chart-box', 'data-partial'))!) as boolean[];
    // A rolling week starts and ends mid-day: its first and last UTC days are partial, the days between are whole.
    expect(partial.length).to.equal(8);
    expect(partial[0]).to.equal(week.from % DAY !== 0);
    expect(partial.at(-1)).to.equal(week.to % DAY !== 0);
    expect(partial.slice(1, -1)).to.deep.equal(Array(6).fill(false));
    const labels = (await suite.page.evaluate(
      () => (window as any).Chart.getChart(document.querySelector('#cost-chart')).data.labels,
    )) as string[];
    expect(labels.map((l) => l.endsWith(' *'))).to.deep.equal(partial);
    expect(await suite.page.isVisible('#partial-note')).to.equal(partial.includes(true));
    expect(await suite.page.textContent('#chart-zone')).to.equal('UTC days');
    // Yesterday is whole UTC hours: nothing partial, no note.
    await choose('yesterday');
    const whole = JSON.parse((await suite.page.getAttribute('.chart-box', 'data-partial'))!) as boolean[];
    expect(whole).to.deep.equal(Array(24).fill(false));
    expect(await suite.page.isVisible('#partial-note')).to.equal(false);
    expect(await suite.page.textContent('#chart-zone')).to.equal('UTC hours');
    await suite.page.click('a[data-view="requests"]');
    await suite.page.waitForSelector('#view[data-view="requests"][data-ready="true"]');
    await choose7dRequests();
    const time = await suite.page.textContent('#requests tbody tr:first-child td:first-child');
    expect(time).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await suite.page.click('a[data-view="usage"]');
    await suite.page.waitForSelector('#view[data-view="usage"][data-ready="true"]');
  });

  const choose7dRequests = async () => {
    await suite.page.click('[data-range="7d"]');
    await suite.page.waitForSelector('[data-range="7d"].active');
    await suite.page.waitForSelector('#view[data-view="requests"][data-ready="true"]');
  };
});
