/**
 * What `tollgate demo` sends (cli/demo.ts): agents with their features, models and token sizes, customers, and
 * request times over the past days, all drawn from one seeded generator so that a seed gives the same demo.
 */

const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** Deterministic PRNG (mulberry32), so that a given seed gives the same demo. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Weighted<T> = [T, number][];

export function pick<T>(r: () => number, items: Weighted<T>): T {
  const total = items.reduce((s, [, w]) => s + w, 0);
  let x = r() * total;
  for (const [v, w] of items) if ((x -= w) < 0) return v;
  return items[items.length - 1][0];
}

/** Log-uniform integer in [lo, hi]: token counts have long tails. */
export const logUniform = (r: () => number, lo: number, hi: number) =>
  Math.round(Math.exp(Math.log(lo) + r() * (Math.log(hi) - Math.log(lo))));

export interface AgentProfile {
  agent: string;
  weight: number;
  team: string;
  key: string;
  features: Weighted<string>;
  models: Weighted<string>;
  input: [number, number];
  output: [number, number];
  /** Share of input served from the prompt cache. */
  cache: number;
}

export const AGENTS: AgentProfile[] = [
  {
    agent: 'support-bot',
    weight: 36,
    team: 'support',
    key: 'support',
    features: [
      ['ticket-reply', 6],
      ['triage', 3],
      ['kb-search', 2],
    ],
    models: [
      ['gpt-4o-mini', 6],
      ['claude-haiku-4-5', 3],
    ],
    input: [500, 3000],
    output: [60, 450],
    cache: 0.4,
  },
  {
    agent: 'research-agent',
    weight: 10,
    team: 'platform',
    key: 'platform',
    features: [
      ['deep-research', 3],
      ['summarize', 2],
    ],
    models: [
      ['claude-sonnet-4-5', 5],
      ['o3', 2],
      ['gemini-2.5-pro', 2],
    ],
    input: [4000, 40000],
    output: [500, 5000],
    cache: 0.3,
  },
  {
    agent: 'code-review',
    weight: 14,
    team: 'platform',
    key: 'platform',
    features: [
      ['pr-review', 4],
      ['explain-diff', 1],
    ],
    models: [
      ['claude-sonnet-4-5', 4],
      ['gpt-4.1', 3],
    ],
    input: [2000, 20000],
    output: [200, 2000],
    cache: 0.5,
  },
  {
    agent: 'sales-assistant',
    weight: 20,
    team: 'growth',
    key: 'growth',
    features: [
      ['email-draft', 3],
      ['lead-scoring', 2],
    ],
    models: [
      ['gpt-4o-mini', 5],
      ['gemini-2.5-flash', 3],
      ['mistral-small-latest', 1],
    ],
    input: [300, 2500],
    output: [100, 600],
    cache: 0.1,
  },
  {
    agent: 'doc-summarizer',
    weight: 20,
    team: 'growth',
    key: 'growth',
    features: [
      ['summarize', 3],
      ['extract-fields', 2],
    ],
    models: [
      ['gemini-2.5-flash', 5],
      ['gpt-4.1-mini', 2],
      ['mistral-nightly-preview', 1],
    ],
    input: [2000, 16000],
    output: [150, 1200],
    cache: 0.2,
  },
];

const CUSTOMERS = [
  'acme',
  'globex',
  'initech',
  'umbrella',
  'hooli',
  'stark-industries',
  'wayne-enterprises',
  'wonka',
  'soylent',
  'tyrell',
  'cyberdyne',
  'massive-dynamic',
];
/** Zipf-like: a few big customers, a long tail. */
export const CUSTOMER_WEIGHTS: Weighted<string> = CUSTOMERS.map((c, i) => [c, 1 / (i + 1) ** 1.1]);

export const PROVIDER_KEY = 'sk-demo-not-a-real-provider-key';

/** Request times over [now - days, now): busier in (UTC) working hours and on weekdays, growing over the period. */
export function requestTimes(r: () => number, count: number, days: number, now: number): number[] {
  const start = Math.floor((now - days * DAY) / HOUR) * HOUR;
  const hours: { t: number; w: number }[] = [];
  for (let t = start; t < now; t += HOUR) {
    const d = new Date(t);
    const h = d.getUTCHours();
    const weekend = d.getUTCDay() === 0 || d.getUTCDay() === 6;
    const diurnal = 0.15 + Math.exp(-((h - 14) ** 2) / 20);
    const trend = 0.7 + 0.6 * ((t - start) / (now - start));
    hours.push({ t, w: diurnal * (weekend ? 0.4 : 1) * trend * (0.8 + 0.4 * r()) });
  }
  const total = hours.reduce((s, x) => s + x.w, 0);
  const out: number[] = [];
  for (const { t, w } of hours) {
    const n = Math.round((w / total) * count);
    for (let i = 0; i < n; i++) out.push(Math.min(now - 1, t + Math.floor(r() * HOUR)));
  }
  while (out.length > count) out.splice(Math.floor(r() * out.length), 1);
  while (out.length < count) out.push(now - 1 - Math.floor(r() * HOUR));
  return out.sort((a, b) => a - b);
}
