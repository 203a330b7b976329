/**
 * The spend-anomaly rules on the demo traffic: hits and false alarms of alerts.anomalies' defaults.
 *
 *   npm run build && node dist/bench/anomaly-demo.js
 *   BENCH_DAYS=14 BENCH_SEED=7                       days of demo traffic, the generator's seed
 *   BENCH_RULE='{"factor":3,"min_usd":"2"}'          fields of every rule other than the defaults
 *   BENCH_VOLUMES=360,7000,36000 BENCH_SPIKES=10,25,50  requests per day; loop sizes, $ per 10 minutes
 *
 * The demo's requests (test/helpers/demo-spend.ts: `tollgate demo`'s agents, keys, tags, tokens and failures, priced
 * from the bundled catalog) at three volumes, through the real detector (alerts/anomaly-watch.ts) on a simulated
 * clock looked at every 15 s. Each volume runs twice: the steady traffic alone, where every alert is a false alarm,
 * and the same traffic with runaway loops injected (one agent's key and tags, 30 minutes, one request every 6 s) at
 * three sizes, where an alert on the loop's scope during it (or within a window after) is a hit. Not part of npm test.
 */
import type { AlertInput } from '../alerts/alert';
import { anomalyRuleSchema, type AnomalyRule } from '../config/anomalies';
import { AGENTS, CUSTOMER_WEIGHTS, pick, rng } from '../cli/demo-traffic';
import { demoSpend, spikeSpend, watchOver, type Spike } from '../test/helpers/demo-spend';

const DAY = 86_400_000;
const TICK = 15_000;
const days = Number(process.env.BENCH_DAYS ?? 14);
const seed = Number(process.env.BENCH_SEED ?? 7);
const NOW = Date.UTC(2026, 0, 30);

const RULES: AnomalyRule[] = [
  { name: 'workspace', scope: 'workspace' },
  { name: 'key', scope: 'key' },
  { name: 'agent', scope: 'tag', tag: 'agent' },
  { name: 'customer', scope: 'tag', tag: 'customer_id' },
].map((r) => anomalyRuleSchema.parse({ ...r, ...(JSON.parse(process.env.BENCH_RULE ?? '{}') as object) }));
const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map(Number);

/** One loop per `apartMs`, after two days of warm-up, in a random agent with a random customer. */
function spikes(usdPer10Min: number, apartMs: number): Spike[] {
  const r = rng(seed + 1);
  const out: Spike[] = [];
  for (let from = NOW - days * DAY + 2 * DAY; from < NOW - DAY / 2; from += apartMs) {
    const agent = pick(
      r,
      AGENTS.map((a) => [a, a.weight]),
    );
    const start = from + Math.floor(r() * apartMs * 0.5);
    out.push({
      keyId: agent.key,
      tags: { agent: agent.agent, customer_id: pick(r, CUSTOMER_WEIGHTS), team: agent.team, feature: 'loop' },
      from: start,
      durationMs: 1_800_000,
      usdPer10Min,
    });
  }
  return out;
}

function scopeOf(rule: AnomalyRule, s: Spike): string {
  if (rule.scope === 'workspace') return 'workspace';
  if (rule.scope === 'key') return `key_id=${s.keyId}`;
  return `${rule.tag}=${s.tags[rule.tag!]}`;
}

function judge(raised: { at: number; alert: AlertInput }[], injected: Spike[]) {
  return RULES.map((rule) => {
    const mine = raised.filter((x) => x.alert.rule === rule.name);
    const hitAlerts = new Set<(typeof mine)[number]>();
    let hits = 0;
    for (const s of injected) {
      const hit = mine.filter(
        (x) => x.alert.scope === scopeOf(rule, s) && x.at >= s.from && x.at <= s.from + s.durationMs + rule.window_ms,
      );
      hit.forEach((x) => hitAlerts.add(x));
      if (hit.length > 0) hits++;
    }
    return { rule: rule.name, hits, falseAlarms: mine.filter((x) => !hitAlerts.has(x)).length };
  });
}

const perDayLevels = list('BENCH_VOLUMES', '360,7000,36000');
console.log(`demo traffic over ${days} days (seed ${seed}), rules at their defaults:`, JSON.stringify(RULES[0]));
console.log('| requests/day | spend/day | spike ($ per 10 min, 30 min) | rule | hits | false alarms |');
console.log('|---|---|---|---|---|---|');
for (const perDay of perDayLevels) {
  const steady = demoSpend(seed, perDay * days, days, NOW);
  const spendPerDay = steady.reduce((s, x) => s + x.usd, 0) / days;
  for (const j of judge(watchOver(RULES, steady, TICK, NOW + 3_600_000), []))
    console.log(`| ${perDay} | $${spendPerDay.toFixed(2)} | none | ${j.rule} | - | ${j.falseAlarms} |`);
  for (const size of list('BENCH_SPIKES', '10,25,50')) {
    const injected = spikes(size, DAY);
    const samples = [...steady, ...injected.flatMap(spikeSpend)].sort((a, b) => a.at - b.at);
    for (const j of judge(watchOver(RULES, samples, TICK, NOW + 3_600_000), injected))
      console.log(
        `| ${perDay} | $${spendPerDay.toFixed(2)} | $${size} | ${j.rule} | ${j.hits}/${injected.length} | ${j.falseAlarms} |`,
      );
  }
}
