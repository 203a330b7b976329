/**
 * The spend-anomaly detector at its defaults on the demo's traffic (test/helpers/demo-spend.ts: `tollgate demo`'s
 * agents, keys, tags and tokens priced from the catalog) on a simulated clock: silent on three steady days, one alert
 * per rule for a runaway loop injected on the third, and a baseline seeded from history at start.
 */
import { expect } from 'chai';
import { SpendVelocity } from '../../alerts/spend-velocity';
import { anomalyRuleSchema } from '../../config/anomalies';
import { demoSpend, spikeSpend, watchOver } from '../helpers/demo-spend';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 30);
const RULES = [
  { name: 'workspace', scope: 'workspace' },
  { name: 'key', scope: 'key' },
  { name: 'agent', scope: 'tag', tag: 'agent' },
  { name: 'customer', scope: 'tag', tag: 'customer_id' },
].map((r) => anomalyRuleSchema.parse(r));

describe('spend anomalies on the demo traffic (alerts.anomalies defaults)', function () {
  this.timeout(60_000);
  // 7,000 requests a day, about $70 a day: busier in working hours, quieter at weekends.
  const steady = demoSpend(3, 21_000, 3, NOW);

  it('three days of steady demo traffic raise nothing', () => {
    expect(watchOver(RULES, steady, 15_000, NOW).map((x) => x.alert.title)).to.deep.equal([]);
  });

  it('a loop of $25 per 10 minutes for 30 minutes raises one alert per rule, each on the loop’s scope', () => {
    const from = NOW - DAY / 2 + 3_600_000;
    const loop = spikeSpend({
      keyId: 'growth',
      tags: { agent: 'doc-summarizer', customer_id: 'wonka', team: 'growth' },
      from,
      durationMs: 1_800_000,
      usdPer10Min: 25,
    });
    const raised = watchOver(
      RULES,
      [...steady, ...loop].sort((a, b) => a.at - b.at),
      15_000,
      NOW,
    );
    expect(raised.map((x) => [x.alert.rule, x.alert.scope]).sort()).to.deep.equal([
      ['agent', 'agent=doc-summarizer'],
      ['customer', 'customer_id=wonka'],
      ['key', 'key_id=growth'],
      ['workspace', 'workspace'],
    ]);
    for (const { at } of raised) expect(at - from, 'within the first window of the loop').to.be.within(0, 600_000);
  });

  it('a baseline seeded from history keeps a busy scope quiet at start, and so does the first window unseeded', () => {
    const rule = { windowMs: 600_000, baselineMs: 14_400_000, factor: 4, minUsd: 5 };
    const busy = new SpendVelocity(rule);
    busy.seed(new Map([['busy', 20]])); // $20 per window, usually
    const fresh = new SpendVelocity(rule);
    for (const v of [busy, fresh]) v.tick(0);
    let fired = { busy: 0, fresh: 0 };
    for (let t = 15_000; t <= 1_200_000; t += 15_000) {
      busy.add('busy', 0.5); // $20 per window
      fresh.add('busy', 0.5);
      fired = { busy: fired.busy + busy.tick(t).started.length, fresh: fired.fresh + fresh.tick(t).started.length };
    }
    expect(fired.busy, 'its usual spend').to.equal(0);
    // Unseeded, the rule waits a window: by then the scope's own spend is its baseline.
    expect(fired.fresh).to.equal(0);
    busy.add('busy', 100);
    expect(busy.tick(1_215_000).started.map((e) => e.scope)).to.deep.equal(['busy']);
  });
});
