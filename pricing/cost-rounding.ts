/**
 * The rounding step of the cost figure a provider reports in its answers (usage.cost), where it documents or
 * visibly applies one: Perplexity prints its figure to the tenth of a cent (a request whose tokens cost $0.000403
 * shows 0.0). A provider not listed reports at full precision (OpenRouter). Repricing a stored record uses the
 * same step, since the record keeps only the figure.
 */
const COST_STEPS: Readonly<Record<string, string>> = { perplexity: '0.001' };

/** The rounding step of `provider`'s reported cost in USD, or undefined (full precision). */
export function providerCostStep(provider: string | null | undefined): string | undefined {
  return provider && Object.hasOwn(COST_STEPS, provider) ? COST_STEPS[provider] : undefined;
}
