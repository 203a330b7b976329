/**
 * A negotiated discount, inferred: when the provider charges a steady fraction of the gateway's list-price cost on
 * several models (the same tokens on both sides), that fraction is the account's multiplier. Steady means the
 * models' ratios lie within 1% of their median; a model off that line keeps its own status (a stale price). At
 * least two models must agree, so one mispriced model is never taken for a discount.
 */
import type { PicoUsd } from '../records/usage-record';
import { ratioPpm, within } from './ratio';

export interface DiscountSample {
  model: string;
  /** The gateway's cost at list price (before pricing.discounts). */
  gatewayPico: PicoUsd;
  providerPico: PicoUsd;
}

const STEADY_PPM = 10_000n;

/** The multiplier in millionths and the models it rests on; null when no steady discount shows. */
export function inferDiscount(
  samples: readonly DiscountSample[],
  tolerancePpm: bigint,
): { ppm: bigint; models: string[] } | null {
  const perModel = new Map<string, { g: bigint; p: bigint }>();
  for (const s of samples) {
    if (s.gatewayPico <= 0n || s.providerPico <= 0n) continue;
    const m = perModel.get(s.model) ?? { g: 0n, p: 0n };
    m.g += s.gatewayPico;
    m.p += s.providerPico;
    perModel.set(s.model, m);
  }
  const ratios = [...perModel].map(([model, m]) => ({ model, ...m, ppm: ratioPpm(m.p, m.g)! }));
  if (ratios.length < 2) return null;
  const sorted = ratios.map((r) => r.ppm).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const median = sorted[Math.floor(sorted.length / 2)];
  const steady = ratios.filter((r) => within(r.ppm, median, STEADY_PPM));
  if (steady.length < 2) return null;
  const ppm = ratioPpm(
    steady.reduce((a, r) => a + r.p, 0n),
    steady.reduce((a, r) => a + r.g, 0n),
  )!;
  // A ratio of 1 within the tolerance is list price, not a discount.
  if (within(ppm, 1_000_000n, tolerancePpm) || ppm > 1_000_000n) return null;
  return { ppm, models: steady.map((r) => r.model).sort() };
}
