import type { ProviderModule } from '../../core/provider-contract';
import { pricingConfigSchema, type ModelOverride } from '../../pricing/config';
import { ProviderConfigError } from './provider-module-import';

/**
 * A provider module's prices (ProviderModule.prices) validated exactly as pricing.models entries are, for the slug
 * it is deployed as: the prices, or the problems, each named by its path in the module (`prices.0.input: ...`).
 */
function checkProviderPrices(prices: unknown, slug: string): { prices: ModelOverride[]; problems: string[] } {
  if (prices === undefined) return { prices: [], problems: [] };
  if (!Array.isArray(prices))
    return { prices: [], problems: ['prices: expected an array of { model, input, output, ... }'] };
  const parsed = pricingConfigSchema.safeParse({ models: prices.map((p) => ({ ...p, provider: slug })) });
  const issues = (parsed.error?.issues ?? []).map((x) => {
    const [, at, ...rest] = x.path.map(String); // models.<at>.<field>
    return { at: Number(at), text: `${['prices', at, ...rest].join('.')}: ${x.message}` };
  });
  prices.forEach((p, at) => {
    if (typeof p === 'object' && p !== null && 'provider' in p) {
      issues.push({
        at,
        text: `prices.${at}.provider: not allowed: a module's prices apply to the slug it is deployed as`,
      });
    }
  });
  const problems = issues.sort((a, b) => a.at - b.at).map((i) => i.text);
  return problems.length > 0 ? { prices: [], problems } : { prices: parsed.data!.models, problems };
}

/** The prices every deployed provider's module declares, under its deployed slug (the YAML key). */
export function deployedProviderPrices(deployed: readonly ProviderModule[]): ModelOverride[] {
  return deployed.flatMap((p) => {
    const { prices, problems } = checkProviderPrices(p.prices, p.slug);
    if (problems.length > 0)
      throw new ProviderConfigError(`providers.${p.slug}: the module's prices are not valid: ${problems.join('; ')}`);
    return prices;
  });
}
