/**
 * Matching: the gateway's lines against the bill's, per UTC day x model x scope, each pair given a status
 * (report.ts) and a sentence saying why. Exact: amounts are pico-USD bigints, ratios millionths.
 */
import { formatUsd } from '../pricing/money';
import type { BillLine, BillTokens } from './bill';
import { inferDiscount } from './discount';
import type { GatewayLine } from './gateway-lines';
import { applyPpm, ppmOf, ppmText, ppmText4, ratioPpm, within } from './ratio';
import type { InferredDiscount, LineStatus, ReconciliationLine, ReconciliationReport } from './report';
import { explain } from './status-notes';

export interface MatchOptions {
  provider: string;
  /** UTC days, [from, to). */
  from: string;
  to: string;
  /** Share of the provider's cost two figures may differ by and still agree ("0.005"). */
  tolerance: string;
  /** Days from this one on are inside the restatement window (the provider may still change them). */
  notFinalFrom: string;
  /** Provider project, workspace or key id -> gateway workspace. */
  scopes: Readonly<Record<string, string>>;
}

interface Pair {
  day: string;
  model: string | null;
  scope: string | null;
  gateway: GatewayLine | null;
  bill: BillLine | null;
}

const totalTokens = (t: BillTokens) => BigInt(t.input + t.cacheRead + t.cacheWrite + t.output);

function pairUp(gateway: readonly GatewayLine[], bill: readonly BillLine[], scopes: MatchOptions['scopes']): Pair[] {
  const pairs = new Map<string, Pair>();
  const at = (day: string, model: string | null, scope: string | null) => {
    const key = JSON.stringify([day, model, scope]);
    let p = pairs.get(key);
    if (!p) pairs.set(key, (p = { day, model, scope, gateway: null, bill: null }));
    return p;
  };
  for (const g of gateway) at(g.day, g.model, g.scope).gateway = g;
  for (const b of bill) {
    const p = at(b.day, b.model, b.scope === null ? null : (scopes[b.scope] ?? null));
    p.bill = p.bill ? sumBill(p.bill, b) : b;
  }
  return [...pairs.values()].sort((a, b) =>
    JSON.stringify([a.day, a.model ?? '', a.scope ?? '']).localeCompare(
      JSON.stringify([b.day, b.model ?? '', b.scope ?? '']),
    ),
  );
}

/** Two bill lines that map to the same scope (two projects of one workspace), added up. */
function sumBill(a: BillLine, b: BillLine): BillLine {
  const tokens =
    a.tokens && b.tokens
      ? {
          input: a.tokens.input + b.tokens.input,
          cacheRead: a.tokens.cacheRead + b.tokens.cacheRead,
          cacheWrite: a.tokens.cacheWrite + b.tokens.cacheWrite,
          output: a.tokens.output + b.tokens.output,
        }
      : (a.tokens ?? b.tokens);
  const cost = a.costPico === null ? b.costPico : b.costPico === null ? a.costPico : a.costPico + b.costPico;
  const requests = a.requests === null ? b.requests : b.requests === null ? a.requests : a.requests + b.requests;
  return { ...a, tokens, costPico: cost, requests };
}

/** Tokens: 'same' within tolerance, 'more' when the provider counted more, 'fewer', or null when one side has none. */
function compareTokens(g: GatewayLine, b: BillLine, tolerancePpm: bigint): 'same' | 'more' | 'fewer' | null {
  if (!b.tokens) return null;
  const [gt, bt] = [totalTokens(g.tokens), totalTokens(b.tokens)];
  if (within(gt, bt, tolerancePpm)) return 'same';
  return bt > gt ? 'more' : 'fewer';
}

function statusOf(g: GatewayLine, b: BillLine, expected: bigint, discounted: boolean, tolPpm: bigint): LineStatus {
  const tokens = compareTokens(g, b, tolPpm);
  if (b.costPico === null) return tokens === 'more' ? 'not_seen_by_gateway' : tokens === 'fewer' ? 'drift' : 'match';
  const agree = tokens === null || tokens === 'same';
  if (b.costPico === expected && agree) return discounted ? 'discounted' : 'match';
  if (within(expected, b.costPico, tolPpm) && agree) return discounted ? 'discounted' : 'within_tolerance';
  if (g.unpriced > 0) return 'unpriced';
  if (tokens === 'more') return 'not_seen_by_gateway';
  if (tokens === 'same') return 'priced_differently';
  return 'drift';
}

const FINAL: ReadonlySet<LineStatus> = new Set(['match', 'within_tolerance', 'discounted', 'provider_only']);

export function matchBill(
  gateway: readonly GatewayLine[],
  bill: readonly BillLine[],
  opts: MatchOptions,
): ReconciliationReport {
  const tolPpm = ppmOf(opts.tolerance);
  const pairs = pairUp(gateway, bill, opts.scopes);
  // A multiplier applies to list prices: a line whose cost (pricing.discounts already applied) agrees with the bill
  // is no evidence of a further discount, and the others are measured against their list cost.
  const agreesAtCost = (p: Pair) =>
    p.gateway && p.bill?.costPico != null && within(p.gateway.costPico, p.bill.costPico, tolPpm);
  const found = inferDiscount(
    pairs.flatMap((p) =>
      p.gateway && p.bill?.costPico != null && p.model !== null && p.gateway.unpriced === 0 && !agreesAtCost(p)
        ? compareTokens(p.gateway, p.bill, tolPpm) !== 'more' && compareTokens(p.gateway, p.bill, tolPpm) !== 'fewer'
          ? [{ model: p.model, gatewayPico: p.gateway.listCostPico, providerPico: p.bill.costPico }]
          : []
        : [],
    ),
    tolPpm,
  );
  const discountModels = new Set(found?.models ?? []);
  const figures: Figures[] = [];
  const lines: ReconciliationLine[] = pairs.map((p) => {
    const g = p.gateway;
    const b = p.bill;
    const discounted = found !== null && p.model !== null && discountModels.has(p.model) && !agreesAtCost(p);
    const expected = g ? (discounted ? applyPpm(g.listCostPico, found.ppm) : g.costPico) : null;
    let status: LineStatus = !g ? 'provider_only' : !b ? 'gateway_only' : statusOf(g, b, expected!, discounted, tolPpm);
    if (p.day >= opts.notFinalFrom && !FINAL.has(status)) status = 'not_final';
    const ratio = g && b?.costPico != null ? ratioPpm(b.costPico, g.costPico) : null;
    const line: ReconciliationLine = {
      day: p.day,
      model: p.model,
      scope: p.scope,
      status,
      gateway: g && {
        requests: g.requests,
        tokens: g.tokens,
        cost_usd: formatUsd(g.costPico),
        list_cost_usd: formatUsd(g.listCostPico),
        unpriced: g.unpriced,
        estimated: g.estimated,
      },
      provider: b && {
        requests: b.requests,
        tokens: b.tokens,
        cost_usd: b.costPico === null ? null : formatUsd(b.costPico),
      },
      expected_usd: discounted && expected !== null ? formatUsd(expected) : null,
      difference_usd: b?.costPico != null ? formatUsd(b.costPico - (expected ?? 0n)) : null,
      ratio: ratio === null ? null : ppmText(ratio),
      note: '',
    };
    line.note = explain(line, found && ppmText4(found.ppm));
    figures.push({
      day: p.day,
      provider: b?.costPico ?? 0n,
      expected: expected ?? 0n,
      gateway: g?.costPico ?? 0n,
      list: g?.listCostPico ?? 0n,
    });
    return line;
  });
  return assemble(opts, lines, figures, found && discountOf(opts.provider, found.ppm, found.models));
}

function discountOf(provider: string, ppm: bigint, models: string[]): InferredDiscount {
  // pricing.discounts takes the fraction taken off list price, not the multiplier.
  const off = ppmText4(1_000_000n - ppm);
  return { multiplier: ppmText4(ppm), models, override: `pricing:\n  discounts:\n    ${provider}: "${off}"` };
}

/** A line's amounts in pico-USD: the provider's cost, the gateway's expected cost, its cost and its list cost. */
interface Figures {
  day: string;
  provider: bigint;
  expected: bigint;
  gateway: bigint;
  list: bigint;
}

function driftPpm(provider: bigint, gateway: bigint): bigint {
  if (provider === 0n) return gateway === 0n ? 0n : 1_000_000n;
  const d = ratioPpm(provider - gateway, provider)!;
  return d < 0n ? -d : d;
}

function assemble(
  opts: MatchOptions,
  lines: ReconciliationLine[],
  figures: Figures[],
  discount: InferredDiscount | null,
): ReconciliationReport {
  let [gatewayAll, listAll, providerAll, expectedFinal, providerFinal] = [0n, 0n, 0n, 0n, 0n];
  const days = new Map<string, [bigint, bigint]>();
  for (const f of figures) {
    gatewayAll += f.gateway;
    listAll += f.list;
    providerAll += f.provider;
    if (f.day >= opts.notFinalFrom) continue;
    expectedFinal += f.expected;
    providerFinal += f.provider;
    const d = days.get(f.day) ?? [0n, 0n];
    days.set(f.day, [d[0] + f.provider, d[1] + f.expected]);
  }
  let worst: { day: string; ppm: bigint } | null = null;
  for (const [day, [p, g]] of days) {
    const ppm = driftPpm(p, g);
    if (!worst || ppm > worst.ppm) worst = { day, ppm };
  }
  const counts: ReconciliationReport['counts'] = {};
  for (const l of lines) counts[l.status] = (counts[l.status] ?? 0) + 1;
  return {
    provider: opts.provider,
    from: opts.from,
    to: opts.to,
    tolerance: opts.tolerance,
    discount,
    totals: {
      gateway_usd: formatUsd(gatewayAll),
      gateway_list_usd: formatUsd(listAll),
      provider_usd: formatUsd(providerAll),
      difference_usd: formatUsd(providerAll - gatewayAll),
      drift: days.size === 0 ? null : ppmText(driftPpm(providerFinal, expectedFinal)),
    },
    worst_day: worst && { day: worst.day, drift: ppmText(worst.ppm) },
    counts,
    lines,
  };
}
