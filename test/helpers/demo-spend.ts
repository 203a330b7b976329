/**
 * The demo's traffic (cli/demo.ts, cli/demo-traffic.ts) as spend samples at given times, for the spend-anomaly
 * detector: the same agents, keys, tags, token counts and failures as `tollgate demo` sends, each request priced from
 * the bundled catalog's per-token rates (input, cache reads, output with reasoning; failures cost nothing). A spike
 * adds a runaway loop of one scope on top.
 */
import { AnomalyWatch } from '../../alerts/anomaly-watch';
import type { AlertInput } from '../../alerts/alert';
import { demoRequest } from '../../cli/demo';
import { requestTimes, rng } from '../../cli/demo-traffic';
import type { AnomalyRule } from '../../config/anomalies';
import { PriceCatalog } from '../../pricing/catalog';
import { createLogger } from '../../runtime/logger';

export interface SpendAt {
  at: number;
  workspace: string;
  keyId: string;
  tags: Record<string, string>;
  usd: number;
}

const KEYS = { support: 'support', platform: 'platform', growth: 'growth', demo: 'demo' };
const PROVIDER: Record<string, string> = { gemini: 'gemini', mistral: 'mistral', claude: 'anthropic' };

const rate = (v: string | undefined) => (v === undefined ? 0 : Number(v) / 1e6);

/** `count` demo requests spread over `days` before `now`, busier in working hours, as spend. */
export function demoSpend(seed: number, count: number, days: number, now: number): SpendAt[] {
  const r = rng(seed);
  const catalog = new PriceCatalog();
  const times = requestTimes(r, count, days, now);
  return times.map((at, i) => {
    const { headers, body } = demoRequest(r, i, KEYS);
    const model = (JSON.parse(body) as { model: string }).model;
    const provider = PROVIDER[model.split('-')[0]] ?? 'openai';
    const price = catalog.lookup(provider, model);
    const [input, output, cacheRead] = headers['x-demo-usage'].split(',').map(Number);
    const failed = headers['x-demo-status'] !== '200';
    const usd =
      failed || !price
        ? 0
        : input * rate(price.input) + cacheRead * rate(price.cache_read ?? price.input) + output * rate(price.output);
    const tags = JSON.parse(headers['x-gateway-metadata']) as Record<string, string>;
    return { at, workspace: 'default', keyId: headers['x-gateway-key'], tags, usd };
  });
}

export interface Spike {
  /** The scope the loop runs in: its key and tags. */
  keyId: string;
  tags: Record<string, string>;
  from: number;
  durationMs: number;
  /** What the loop spends per 10 minutes. */
  usdPer10Min: number;
}

/** A runaway loop: one request every 6 s for the spike's duration, each costing its share of the spike's rate. */
export function spikeSpend(spike: Spike): SpendAt[] {
  const every = 6_000;
  const each = (spike.usdPer10Min * every) / 600_000;
  const out: SpendAt[] = [];
  for (let at = spike.from; at < spike.from + spike.durationMs; at += every)
    out.push({ at, workspace: 'default', keyId: spike.keyId, tags: spike.tags, usd: each });
  return out;
}

/**
 * The rules' detector (no store, no channel) over samples sorted by time, on a simulated clock looked at every
 * `tickMs` from the first sample to `until`: the alerts raised, with the time each was.
 */
export function watchOver(
  rules: AnomalyRule[],
  samples: readonly SpendAt[],
  tickMs: number,
  until: number,
): { at: number; alert: AlertInput }[] {
  const raised: { at: number; alert: AlertInput }[] = [];
  let at = samples[0].at;
  const collect = async (alerts: readonly AlertInput[]) => void alerts.forEach((alert) => raised.push({ at, alert }));
  const watch = new AnomalyWatch(rules, collect, undefined, tickMs, createLogger('silent'));
  let i = 0;
  for (; at <= until; at += tickMs) {
    for (; i < samples.length && samples[i].at < at; i++) watch.observe(samples[i]);
    void watch.tick(at);
  }
  return raised;
}
