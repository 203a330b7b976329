/**
 * Gateway overhead in Debian's Chromium (playwright-core): real chats through the gateway, with the official openai
 * client, to a loopback upstream that really waits (before its answer's head, and between a stream's events). Each
 * record keeps the provider's time (upstream_ms, sending upstream to the last byte of the answer), so it covers every
 * wait the upstream made, a stream's included; GET /api/latency gives p50 / p95 of latency - upstream_ms per model,
 * and the latency view shows them.
 */
import { expect } from 'chai';
import { adminGet, waitForRecords } from '../helpers/admin';
import { openaiClient } from '../helpers/gateway';
import { recordedResponder } from '../helpers/upstream';
import { resultPath, useDashboard } from './browser';

/** The upstream waits this long before every answer's head. */
const HEAD_WAIT_MS = 150;
/** And this long between a stream's events. */
const EVENT_WAIT_MS = 40;
const CHATS = 4;

/** Nearest-rank percentile, as a reader of the docs would compute it by hand. */
function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1];
}

describe('dashboard gateway overhead (Chromium, playwright-core)', function () {
  /** Least time the upstream spent on each request, by whether it streamed. */
  const waited = { json: HEAD_WAIT_MS, stream: 0 };

  const suite = useDashboard({
    seed: async (gw, upstream) => {
      upstream.respondWith((req, body) => {
        const reply = recordedResponder(req, body)!;
        if (Array.isArray(reply.body)) waited.stream = HEAD_WAIT_MS + (reply.body.length - 1) * EVENT_WAIT_MS;
        return { ...reply, headerDelayMs: HEAD_WAIT_MS, delayMs: EVENT_WAIT_MS };
      });
      const client = openaiClient(gw);
      const messages = [{ role: 'user' as const, content: 'hi' }];
      for (let i = 0; i < CHATS; i++) {
        await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
        const stream = await client.chat.completions.create({
          model: 'gpt-4o-mini',
          messages,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const _ of stream); // read to the end, as a client does
      }
      await waitForRecords(gw, 2 * CHATS);
    },
  });

  it("keeps the provider's time of each request, its whole answer included, a stream's events too", async () => {
    const records = (await adminGet(suite.gw, '/api/requests?limit=100')).data;
    expect(records).to.have.length(2 * CHATS);
    expect(waited.stream).to.be.greaterThan(HEAD_WAIT_MS + EVENT_WAIT_MS);
    for (const r of records) {
      // The upstream really waited this long inside the provider's time; the gateway's latency holds all of it.
      expect(r.upstream_ms, r.id).to.be.at.least(r.streamed ? waited.stream : waited.json);
      expect(r.upstream_ms, r.id).to.be.at.most(r.latency_ms);
    }
  });

  it('answers overhead p50 / p95 per model from those records, and the latency view shows them', async () => {
    const records = (await adminGet(suite.gw, '/api/requests?limit=100')).data;
    await suite.page.click('a[data-view="latency"]');
    await suite.page.waitForSelector('#view[data-view="latency"][data-ready="true"]');
    const from = await suite.page.getAttribute('#view', 'data-from');
    const to = await suite.page.getAttribute('#view', 'data-to');
    const answer = await adminGet(suite.gw, `/api/latency?from=${from}&to=${to}`);
    expect(answer.models.length).to.be.greaterThan(0);
    for (const m of answer.models) {
      const overheads = records
        .filter((r: any) => (r.served_model ?? r.model) === m.model)
        .map((r: any) => r.latency_ms - r.upstream_ms);
      expect(m.timed, m.model).to.equal(overheads.length);
      expect(m.overhead_ms, m.model).to.deep.equal({
        p50: nearestRank(overheads, 50),
        p95: nearestRank(overheads, 95),
      });
      expect(
        m.series.overhead_p95.filter((v: number | null) => v !== null),
        m.model,
      ).to.not.be.empty;
      const row = `#latency-models tr[data-model="${m.model}"]`;
      for (const [col, value] of [
        ['overhead_p50', m.overhead_ms.p50],
        ['overhead_p95', m.overhead_ms.p95],
      ])
        expect(
          await suite.page.getAttribute(`${row} td[data-col="${col}"]`, 'data-value'),
          `${m.model} ${col}`,
        ).to.equal(String(value));
    }
    const lines = await suite.page.evaluate(
      () => (window as any).Chart.getChart(document.querySelector('#overhead-chart')).data.datasets.length,
    );
    expect(lines).to.equal(answer.models.length);
    await suite.page.screenshot({ path: resultPath('dashboard-overhead.png'), fullPage: true });
  });
});
