/**
 * The fix for a stale price that a reconciliation found: for each model whose lines are priced_differently, a dated
 * price override at the price the bill implies (the price in force at the period's start times the bill's ratio),
 * in force over the report's days. `tollgate reconcile-fix` writes them into the config and reprices the period.
 */
import { BUCKETS } from '../pricing/model-price';
import type { PriceCatalog } from '../pricing/catalog';
import { mulDecimal } from '../pricing/decimal';
import { parseUsd } from '../pricing/money';
import { ppmText, ratioPpm } from './ratio';
import type { ReconciliationReport } from './report';

/** A pricing.models entry as the config file takes it (USD per 1M tokens, decimal strings). */
export type PriceOverrideYaml = Record<string, string>;

export interface ImpliedPrice {
  model: string;
  /** Provider cost over gateway cost on the model's priced_differently lines, 6 decimals. */
  ratio: string;
  override: PriceOverrideYaml;
}

export function impliedPrices(report: ReconciliationReport, catalog: PriceCatalog): ImpliedPrice[] {
  const sums = new Map<string, { gateway: bigint; provider: bigint }>();
  for (const l of report.lines) {
    if (l.status !== 'priced_differently' || !l.model || !l.gateway || l.provider?.cost_usd == null) continue;
    const s = sums.get(l.model) ?? { gateway: 0n, provider: 0n };
    s.gateway += parseUsd(l.gateway.cost_usd);
    s.provider += parseUsd(l.provider.cost_usd);
    sums.set(l.model, s);
  }
  const from = Date.parse(`${report.from}T00:00:00Z`);
  const out: ImpliedPrice[] = [];
  for (const [model, s] of sums) {
    const ppm = ratioPpm(s.provider, s.gateway);
    const price = catalog.lookupAt(report.provider, model, from);
    if (ppm === null || !price) continue;
    const ratio = ppmText(ppm);
    const override: PriceOverrideYaml = { provider: price.provider, model: price.model };
    for (const b of BUCKETS) if (price[b] !== undefined) override[b] = mulDecimal(price[b], ratio);
    override.effective_from = report.from;
    override.effective_to = report.to;
    out.push({ model, ratio, override });
  }
  return out;
}
