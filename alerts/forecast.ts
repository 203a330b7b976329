/**
 * End-of-period spend projected from the burn rate over a trailing window. The burn is measured from samples of
 * each budget's spend (the limit store's counters, shared by every instance) taken off the request path, so a
 * forecast costs no query; a budget is sampled at most SAMPLES times per window.
 */
export interface Forecast {
  projectedPico: bigint;
  /** When spend reaches the limit at this rate (epoch ms); null when it does not within the period, or already did. */
  limitReachedAt: number | null;
  /** The span the burn was measured over (at most the window). */
  windowMs: number;
}

/** Samples kept per budget and window. */
const SAMPLES = 32;

interface Sample {
  at: number;
  spentPico: bigint;
}

/** Projects spend at periodEnd: spent now, plus the spend of the last `spanMs` repeated until the period ends. */
export function project(
  spentPico: bigint,
  burnPico: bigint,
  spanMs: number,
  now: number,
  periodEnd: number,
  limitPico: bigint,
): Forecast {
  const left = BigInt(Math.max(0, periodEnd - now));
  const span = BigInt(Math.max(1, spanMs));
  const projectedPico = spentPico + (burnPico * left) / span;
  let limitReachedAt: number | null = null;
  if (spentPico < limitPico && burnPico > 0n) {
    const at = now + Number(((limitPico - spentPico) * span + burnPico - 1n) / burnPico);
    if (at <= periodEnd) limitReachedAt = at;
  }
  return { projectedPico, limitReachedAt, windowMs: spanMs };
}

/** The spend samples of the budgets in use, by budget key (a key names its period, so a new period starts empty). */
export class BurnRates {
  private readonly samples = new Map<string, Sample[]>();

  constructor(
    private readonly windowMs: number,
    /** No forecast until a budget has been watched this long. */
    private readonly minSpanMs: number,
  ) {}

  /** Notes a budget's spend now; budgets not in `keys` (gone, or of a past period) are forgotten. */
  observe(observed: readonly { key: string; spentPico: bigint }[], now: number): void {
    const seen = new Set<string>();
    for (const { key, spentPico } of observed) {
      seen.add(key);
      const list = this.samples.get(key) ?? [];
      if (list.length === 0) this.samples.set(key, list);
      // A sample too close to the one before replaces the latest: at most SAMPLES per window.
      if (list.length > 1 && now - list[list.length - 2].at < this.windowMs / SAMPLES) list.pop();
      list.push({ at: now, spentPico });
      while (list.length > 2 && now - list[1].at >= this.windowMs) list.shift();
    }
    for (const key of this.samples.keys()) if (!seen.has(key)) this.samples.delete(key);
  }

  /** The forecast of a budget from its samples; null until it has been watched minSpanMs. */
  forecast(b: { key: string; spentPico: bigint; limitPico: bigint; periodEnd: number }, now: number): Forecast | null {
    const list = this.samples.get(b.key);
    if (!list || list.length < 2) return null;
    // The oldest sample kept is the last one taken a window ago or more (or the first, for a younger budget).
    const from = list[0];
    const spanMs = now - from.at;
    if (spanMs < Math.max(1, this.minSpanMs)) return null;
    const burn = b.spentPico - from.spentPico;
    return project(b.spentPico, burn < 0n ? 0n : burn, spanMs, now, b.periodEnd, b.limitPico);
  }
}
