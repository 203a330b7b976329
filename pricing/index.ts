/** Pricing: the bundled price catalog, overrides, and exact cost computation. */
export { PriceCatalog, bundledCatalog, type PriceCatalogOptions } from './catalog';
export {
  pricingConfigSchema,
  normalizeProviderSlug,
  type PricingConfig,
  type PricingConfigInput,
  type ModelOverride,
} from './config';
export { priceUsage, type PriceUsageOptions, type PricedUsage, type ProvenanceHint } from './cost';
export { importLiteLlm, importLiteLlmText, type LiteLlmImport } from './litellm';
export {
  PICO_PER_USD,
  ExactSum,
  formatUsd,
  parseUsd,
  picoPerToken,
  rateFromPerMillion,
  rateFromUsd,
  type Rate,
} from './money';
export type { CatalogFile, CatalogModel, ModelPrice, PriceMatch, MatchRule, SkippedEntry } from './model-price';
