/**
 * The mix of the big-store generator (bench/scale.ts): the demo's agents, teams, keys, features, models and token
 * sizes (cli/demo-traffic.ts), its customers with a long tail added (a big store serves more than the demo's 12),
 * and days over a year, weekends lighter and traffic growing over the year as in the demo.
 *
 * Both generators draw from the same slot tables: a record takes the combination of slot floor(u * COMBO_SLOTS)
 * and the customer of slot floor(u * CUSTOMER_SLOTS), so the SQLite generator (in JS) and the PostgreSQL one (in
 * SQL, joining these tables) write the same distribution.
 */
import { AGENTS, CUSTOMER_WEIGHTS, DAY } from '../../cli/demo-traffic';

export const COMBO_SLOTS = 10_000;
export const CUSTOMER_SLOTS = 100_000;
export const CUSTOMERS = 2000;
/** Share of requests sent with the shared demo key instead of the agent's own (as the demo does). */
const SHARED_KEY_SHARE = 0.1;
export const STAGING_SHARE = 0.08;
export const FAILURE_SHARE = 0.015;

/** Provider and per-token prices in pico-USD (input, output; cache reads at a tenth of input). */
const MODELS: Record<string, [provider: string, inPico: number, outPico: number] | undefined> = {
  'gpt-4o-mini': ['openai', 150_000, 600_000],
  'gpt-4.1': ['openai', 2_000_000, 8_000_000],
  'gpt-4.1-mini': ['openai', 400_000, 1_600_000],
  o3: ['openai', 2_000_000, 8_000_000],
  'claude-haiku-4-5': ['anthropic', 1_000_000, 5_000_000],
  'claude-sonnet-4-5': ['anthropic', 3_000_000, 15_000_000],
  'gemini-2.5-flash': ['gemini', 300_000, 2_500_000],
  'gemini-2.5-pro': ['gemini', 1_250_000, 10_000_000],
  'mistral-small-latest': ['mistral', 100_000, 300_000],
  // The demo's unpriced model: its records have no cost (provenance unpriced).
  'mistral-nightly-preview': ['mistral', 0, 0],
};

/** One combination of agent, model, feature and key: what decides a record's dimensions but its customer and env. */
export interface Combo {
  agent: string;
  team: string;
  feature: string;
  keyId: string;
  workspaceId: string;
  provider: string;
  model: string;
  endpoint: 'messages' | 'chat.completions';
  inLo: number;
  inHi: number;
  outLo: number;
  outHi: number;
  cache: number;
  /** Pico-USD per token; 0 = unpriced. */
  inRate: number;
  outRate: number;
  reasoning: boolean;
  weight: number;
}

function combos(): Combo[] {
  const out: Combo[] = [];
  const share = <T>(items: [T, number][]) => {
    const total = items.reduce((s, [, w]) => s + w, 0);
    return items.map(([v, w]): [T, number] => [v, w / total]);
  };
  const agents = share(AGENTS.map((a): [(typeof AGENTS)[number], number] => [a, a.weight]));
  for (const [a, aw] of agents)
    for (const [model, mw] of share(a.models))
      for (const [feature, fw] of share(a.features))
        for (const [keyId, kw] of [
          [`key-${a.key}`, 1 - SHARED_KEY_SHARE],
          ['key-demo', SHARED_KEY_SHARE],
        ] as const) {
          const [provider, inRate, outRate] = MODELS[model] ?? ['openai', 0, 0];
          out.push({
            ...{ agent: a.agent, team: a.team, feature, keyId, workspaceId: 'default', provider, model },
            endpoint: model.startsWith('claude-') ? 'messages' : 'chat.completions',
            ...{ inLo: a.input[0], inHi: a.input[1], outLo: a.output[0], outHi: a.output[1], cache: a.cache },
            ...{ inRate, outRate, reasoning: model === 'o3', weight: aw * mw * fw * kw },
          });
        }
  return out;
}

/** Slot i gets the item whose cumulative share covers (i + 0.5) / slots. */
function slots<T>(items: [T, number][], count: number): T[] {
  const total = items.reduce((s, [, w]) => s + w, 0);
  const out: T[] = [];
  let k = 0;
  let cum = items[0][1] / total;
  for (let i = 0; i < count; i++) {
    while ((i + 0.5) / count > cum && k < items.length - 1) cum += items[++k][1] / total;
    out.push(items[k][0]);
  }
  return out;
}

export const COMBOS: readonly Combo[] = combos();
/** Index into COMBOS of each combination slot. */
export const COMBO_SLOT: readonly number[] = slots(
  COMBOS.map((c, i): [number, number] => [i, c.weight]),
  COMBO_SLOTS,
);

/** The demo's customers first (their Zipf weights), then a tail continuing the same law. */
export const CUSTOMER_NAMES: readonly string[] = [
  ...CUSTOMER_WEIGHTS.map(([c]) => c),
  ...Array.from({ length: CUSTOMERS - CUSTOMER_WEIGHTS.length }, (_, i) => `customer-${String(i).padStart(4, '0')}`),
];
export const CUSTOMER_SLOT: readonly number[] = slots(
  CUSTOMER_NAMES.map((_, i): [number, number] => [i, 1 / (i + 1) ** 1.1]),
  CUSTOMER_SLOTS,
);

/** How many records each of `days` days before `end` gets: weekends at 0.4, growing from 0.7 to 1.3 over the range. */
export function dayCounts(records: number, days: number, end: number): { day: number; count: number }[] {
  const first = end - days * DAY;
  const w = Array.from({ length: days }, (_, d) => {
    const dow = new Date(first + d * DAY).getUTCDay();
    return (dow === 0 || dow === 6 ? 0.4 : 1) * (0.7 + (0.6 * d) / Math.max(1, days - 1));
  });
  const total = w.reduce((a, b) => a + b, 0);
  let cum = 0;
  let given = 0;
  return w.map((x, d) => {
    cum += x;
    const upto = d === days - 1 ? records : Math.round((cum / total) * records);
    const count = upto - given;
    given = upto;
    return { day: first + d * DAY, count };
  });
}

/** Consecutive days grouped by UTC month: from the first day's start to the last day's end. */
export function byMonth(days: { day: number; count: number }[]): { from: number; to: number; days: typeof days }[] {
  const out: { from: number; to: number; days: typeof days }[] = [];
  for (const d of days) {
    const last = out[out.length - 1];
    if (last && new Date(last.from).getUTCMonth() === new Date(d.day).getUTCMonth() && d.day === last.to) {
      last.days.push(d);
      last.to = d.day + DAY;
    } else out.push({ from: d.day, to: d.day + DAY, days: [d] });
  }
  return out;
}
