/**
 * The committed catalog: pricing/catalog.json (rebuilt from the LiteLLM snapshot by scripts/build-price-catalog.ts)
 * with what lives in files of its own merged in: tool fees, audio and image prices, and the corrections (rates the
 * providers publish otherwise than the snapshot says, each with its source).
 */
import bundledJson from './catalog.json';
import toolFeesJson from './tool-fees.json';
import { bundledMediaPrices, withMediaPrices } from './media-prices';
import { catalogFileSchema, type CatalogFile } from './model-price';
import { bundledCorrections, withCorrections } from './price-corrections';

let bundledCache: CatalogFile | undefined;

/** The committed catalog, validated once (a malformed price fails loudly at startup, never as $0). */
export function bundledCatalog(): CatalogFile {
  if (bundledCache) return bundledCache;
  const base = catalogFileSchema.parse({ ...bundledJson, tool_fees: toolFeesJson });
  const media = bundledMediaPrices();
  const merged = withMediaPrices(base.models, base.skipped, media);
  const models = withCorrections(merged.models, bundledCorrections());
  bundledCache = { ...base, models, skipped: merged.skipped, media_prices: media };
  return bundledCache;
}
