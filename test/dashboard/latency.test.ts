/**
 * The latency and errors view in Debian's Chromium (playwright-core), and GET /api/latency behind it: exact
 * requests and errors per status from the rollups, p50 / p95 of latency and time to first byte per provider and model
 * from a sample spread over the range (a bounded read: LATENCY_SAMPLE_MAX, whatever the range holds), the newest of
 * each hour, weighed by that hour's requests.
 */
import { expect } from 'chai';
import { LATENCY_SAMPLE_MAX } from '../../admin/dashboard/latency';
import { adminGet } from '../helpers/admin';
import { usageRecord } from '../helpers/records';
import { resultPath, useDashboard } from './browser';

/**
 * Three times what one answer samples, one every 1.4 s over 23 hours (about 2,570 an hour): the newest
 * LATENCY_SAMPLE_MAX alone would cover only the last 8 hours, leaving the chart's older hours empty.
 */
const RECORDS = 3 * LATENCY_SAMPLE_MAX + 50;
const SPACING_MS = 1_400;
const HOUR_MS = 3_600_000;
const model = (i: number) => (i % 2 ? 'gpt-4o' : 'gpt-4o-mini');
const latency = (i: number) => 100 + (i % 100) + (i % 2) * 1000;
const ttfb = (i: number) => (i % 10 === 9 ? null : 10 + (i % 50));
const status = (i: number) => (i % 40 === 0 ? 500 : i % 40 === 1 ? 429 : 200);

/**
 * Nearest-rank percentile of values each standing for `w` requests, as a reader of the docs computes it by hand: the
 * smallest value whose requests at or below it reach p% of all (summed in the same order, so the floats agree).
 */
function nearestRank(values: { v: number; w: number }[], p: number): number {
  const sorted = [...values].sort((a, b) => a.v - b.v);
  const rank = (p / 100) * sorted.reduce((sum, x) => sum + x.w, 0) * (1 - 1e-12);
  let seen = 0;
  return sorted.find((x) => (seen += x.w) >= rank)!.v;
}

describe('dashboard latency and errors (Chromium, playwright-core)', function () {
  const now = Date.now();

  const suite = useDashboard({
    seed: async (gw) => {
      await gw.gateway.store.insertBatch(
        Array.from({ length: RECORDS }, (_, i) =>
          usageRecord({
            id: `l-${String(i).padStart(6, '0')}`,
            ts: now - 60_000 - i * SPACING_MS,
            model: model(i),
            servedModel: model(i),
            status: status(i),
            errorCode: status(i) === 200 ? null : `upstream_${status(i)}`,
            provenance: status(i) === 200 ? 'unpriced' : 'failed',
            latencyMs: latency(i),
            ttfbMs: ttfb(i),
          }),
        ),
      );
    },
    timeoutMs: 120_000,
  });

  it('counts every request and error exactly, and takes the percentiles from the newest records of every hour', async () => {
    const from = now - 86_400_000;
    const answer = await adminGet(suite.gw, `/api/latency?from=${from}&to=${now}`);
    const all = Array.from({ length: RECORDS }, (_, i) => i);
    const ts = (i: number) => now - 60_000 - i * SPACING_MS;
    // The sample as the docs describe it: per hour of the answer, its newest records, as many as the limit over the
    // hours; each stands for the hour's requests over the hour's sampled records.
    const hours: number[] = answer.buckets.map((b: string) => Date.parse(b));
    const perHour = Math.ceil(LATENCY_SAMPLE_MAX / hours.length);
    const weight = new Map<number, number>();
    for (const start of hours) {
      const inHour = all.filter((i) => ts(i) >= Math.max(start, from) && ts(i) < start + HOUR_MS); // newest first
      const taken = inHour.slice(0, perHour);
      for (const i of taken) weight.set(i, inHour.length > perHour ? inHour.length / perHour : 1);
    }
    const sampled = all.filter((i) => weight.has(i));
    expect(sampled.length).to.be.below(RECORDS).and.at.most(LATENCY_SAMPLE_MAX);
    expect(answer.sample).to.deep.include({ records: sampled.length, limit: LATENCY_SAMPLE_MAX, complete: false });
    expect(answer.sample.oldest).to.equal(new Date(ts(sampled.at(-1)!)).toISOString());
    expect(answer.errors.requests).to.equal(RECORDS);
    expect(answer.errors.errors).to.equal(all.filter((i) => status(i) !== 200).length);
    expect(answer.errors.by_status).to.deep.equal(
      [200, 429, 500].map((s) => {
        const n = all.filter((i) => status(i) === s).length;
        return { status: s, requests: n, errors: s === 200 ? 0 : n };
      }),
    );
    expect(answer.errors.by_code.map((c: any) => [c.error_code, c.status, c.requests])).to.deep.equal(
      [429, 500].map((s) => [`upstream_${s}`, s, sampled.filter((i) => status(i) === s).length]),
    );
    for (const name of ['gpt-4o', 'gpt-4o-mini']) {
      const mine = sampled.filter((i) => model(i) === name);
      const row = answer.models.find((m: any) => m.model === name);
      expect(row.requests).to.equal(all.filter((i) => model(i) === name).length);
      expect(row.sampled).to.equal(mine.length);
      const lat = mine.map((i) => ({ v: latency(i), w: weight.get(i)! }));
      const first = mine.flatMap((i) => (ttfb(i) === null ? [] : [{ v: ttfb(i)!, w: weight.get(i)! }]));
      expect(row.latency_ms).to.deep.equal({ p50: nearestRank(lat, 50), p95: nearestRank(lat, 95) });
      expect(row.ttfb_ms).to.deep.equal({ p50: nearestRank(first, 50), p95: nearestRank(first, 95) });
      // Every hour that holds requests has its own percentiles: none is left to the newest records alone.
      hours.forEach((start, h) => {
        const held = mine.some((i) => ts(i) >= start && ts(i) < start + HOUR_MS);
        expect(row.series.latency_p95[h] !== null, `${name}, hour ${h}`).to.equal(held);
      });
      expect(row.series.latency_p95.filter((v: number | null) => v !== null).length).to.be.above(20);
    }
  });

  it('shows the error rate, the percentiles per model, the statuses and the codes, with the sample named', async () => {
    await suite.page.click('a[data-view="latency"]');
    await suite.page.waitForSelector('#view[data-view="latency"][data-ready="true"]');
    const from = await suite.page.getAttribute('#view', 'data-from');
    const to = await suite.page.getAttribute('#view', 'data-to');
    const answer = await adminGet(suite.gw, `/api/latency?from=${from}&to=${to}`);
    expect(await suite.page.getAttribute('#latency-overview [data-metric="requests"]', 'data-value')).to.equal(
      String(RECORDS),
    );
    expect(await suite.page.getAttribute('#latency-overview [data-metric="error_rate"]', 'data-value')).to.equal(
      String(answer.errors.errors),
    );
    for (const m of answer.models) {
      const row = `#latency-models tr[data-model="${m.model}"]`;
      for (const [col, value] of [
        ['latency_p50', m.latency_ms.p50],
        ['latency_p95', m.latency_ms.p95],
        ['ttfb_p50', m.ttfb_ms.p50],
        ['ttfb_p95', m.ttfb_ms.p95],
      ])
        expect(
          await suite.page.getAttribute(`${row} td[data-col="${col}"]`, 'data-value'),
          `${m.model} ${col}`,
        ).to.equal(String(value));
    }
    expect(
      await suite.page.$$eval('#latency-status tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.status)),
    ).to.deep.equal(['200', '429', '500']);
    expect(
      await suite.page.$$eval('#latency-codes tbody tr', (trs) => trs.map((tr) => (tr as HTMLElement).dataset.code)),
    ).to.deep.equal(answer.errors.by_code.map((c: any) => c.error_code)); // most requests first, as the API ranks them
    expect(answer.errors.by_code.map((c: any) => c.error_code).sort()).to.deep.equal(['upstream_429', 'upstream_500']);
    expect(await suite.page.textContent('#latency-sample')).to.include(
      `${answer.sample.records.toLocaleString('en-US')} requests sampled over the range`,
    );
    const lines = await suite.page.evaluate(
      () => (window as any).Chart.getChart(document.querySelector('#latency-chart')).data.datasets.length,
    );
    expect(lines).to.equal(2);
    await suite.page.screenshot({ path: resultPath('dashboard-latency.png'), fullPage: true });
  });
});
