/**
 * The provider's own cost figure (OpenRouter and Perplexity usage.cost) beside the cost computed from the counts and
 * the catalog (pricing/cost.ts step 4): read exactly, compared, and which of the two the record keeps.
 */
import type { Usage } from '../core/usage';
import type { PicoUsd } from '../records/usage-record';
import type { PricedUsage } from './cost';
import { parseDecimal } from './decimal';
import type { ModelPrice } from './model-price';
import { formatUsd, parseUsd } from './money';

/** The provider's own figure in pico-USD, its decimals and its documented rounding step, or undefined. */
export interface ProviderFigure {
  pico: PicoUsd;
  decimals: number;
  /** The step the provider rounds its figure to, in pico-USD (0: reported at full precision). */
  stepPico: PicoUsd;
}

/** The provider's own cost figure, or undefined (absent, unreadable). */
export function providerFigure(usage: Usage | undefined): ProviderFigure | undefined {
  const text = usage?.providerCostUsd;
  if (text === undefined) return undefined;
  try {
    const pico = parseUsd(text);
    if (pico < 0n) return undefined;
    const step = usage?.providerCostStepUsd === undefined ? 0n : parseUsd(usage.providerCostStepUsd);
    return { pico, decimals: decimalsOf(text), stepPico: step > 0n ? step : 0n };
  } catch {
    return undefined; // an unreadable figure: the computed cost stands
  }
}

/**
 * Whether the provider's figure disagrees with the computed cost: they differ, at full precision, by more than 1%
 * of the computed cost plus half the provider's documented rounding step (Perplexity rounds to $0.001, so a figure
 * within $0.0005 of the cost rounds to it). How many digits the figure happens to print ("0.020") does not matter.
 */
export function disagrees(computedPico: PicoUsd, reportedPico: PicoUsd, stepPico: PicoUsd = 0n): boolean {
  const diff = reportedPico > computedPico ? reportedPico - computedPico : computedPico - reportedPico;
  // diff > computed / 100 + step / 2, in integers: 200 * diff > 2 * computed + 100 * step.
  return 200n * diff > 2n * computedPico + 100n * stepPico;
}

/**
 * Puts the provider's figure beside the computed cost. The provider's figure is the record's cost when nothing
 * else is known, when the computed cost rests on another seller's price (OpenRouter priced by the vendor's list
 * price), or when it is at least as precise as the computed one (as many decimals: OpenRouter's usage.cost).
 * A rounded figure (Perplexity's usage.cost, to the tenth of a cent) gives way to the exact computed cost.
 */
export function withProviderFigure(
  computed: PricedUsage,
  reported: ProviderFigure,
  price: ModelPrice | undefined,
): PricedUsage {
  if (computed.costPico === null) {
    return {
      costPico: reported.pico,
      listCostPico: reported.pico,
      provenanceHint: 'provider_reported',
      providerCostPico: reported.pico,
      reason: computed.reason,
    };
  }
  const own = price?.match?.via !== 'openrouter_vendor_fallback';
  const asPrecise = reported.stepPico === 0n && reported.decimals >= decimalsOf(formatUsd(computed.costPico));
  const useReported = !own || asPrecise;
  return {
    ...computed,
    costPico: useReported ? reported.pico : computed.costPico,
    // Catalog discounts are not applied to the provider's figure: it is its own list price.
    listCostPico: useReported ? reported.pico : computed.listCostPico,
    provenanceHint: useReported ? 'provider_reported' : computed.provenanceHint,
    providerCostPico: reported.pico,
    computedCostPico: computed.costPico,
    costDisagrees: disagrees(computed.costPico, reported.pico, reported.stepPico),
  };
}

/** Decimal places of a plain or exponent decimal string ("0.005" -> 3, "1.5e-7" -> 8, "2" -> 0). */
function decimalsOf(text: string): number {
  const v = parseDecimal(text.trim());
  let { coef, scale } = v;
  while (scale > 0 && coef % 10n === 0n) {
    coef /= 10n;
    scale--;
  }
  return Math.max(0, scale);
}
