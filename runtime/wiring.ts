import type { LoadedConfig } from '../config/load';
import type { ProviderModule } from '../core/provider-contract';
import type { ProviderRegistry } from '../core/provider-routing';
import { PriceCatalog } from '../pricing/catalog';
import { importedCatalogPath, readImportedCatalog, type ImportedCatalog } from '../pricing/imported-catalog';
import { planPipeline, type PlannedPlugin } from './loading/plugin-list';
import { loadProviders } from './loading/deployed-providers';
import { loadProviderModules } from './loading/provider-module-import';
import { deployedProviderPrices } from './loading/provider-prices';

/** What start-up builds from the configuration before it opens anything. */
export interface Wiring {
  providers: ProviderRegistry;
  prices: PriceCatalog;
  /** The plugins in pipeline order, loaded and checked, not created yet. */
  pipeline: PlannedPlugin[];
}

/**
 * Everything start-up would refuse, checked without opening a store or a port: provider modules load, their
 * prefixes do not clash and their prices are valid; plugins load (with the gateway's own copy of Tollgate), fit
 * together (their declared dependencies, order and limits) and have valid options; prices parse. `tollgate
 * check-config` runs exactly this, and `start` runs it before it opens the store or creates a key (in multi-core
 * mode, in the primary too), so a configuration check-config accepts does not fail later.
 */
export async function prepareWiring(
  loaded: LoadedConfig,
  extraProviders: Readonly<Record<string, ProviderModule>> = {},
): Promise<Wiring> {
  const { providers, prices } = await deployProviders(loaded, extraProviders);
  return { providers, prices, pipeline: await planPipeline(loaded.config, loaded.dir) };
}

/**
 * The deployed providers and the prices in force: the bundled catalog, the imported one (`tollgate prices update`,
 * pricing.catalog_file, read when the file exists), the deployed provider modules' own prices, then the deployment's
 * pricing block (litellm_file, models, discounts), which wins. `imported` replaces what the file holds (null: none).
 */
export async function deployProviders(
  loaded: LoadedConfig,
  extraProviders: Readonly<Record<string, ProviderModule>> = {},
  imported?: ImportedCatalog | null,
): Promise<{ providers: ProviderRegistry; prices: PriceCatalog }> {
  const { config } = loaded;
  const providers = loadProviders(config, {
    ...extraProviders,
    ...(await loadProviderModules(config.providers, loaded.dir)),
  });
  const catalog = imported === undefined ? readImportedCatalog(importedCatalogFile(loaded)) : imported;
  return { providers, prices: pricesInForce(loaded, providers, catalog ?? undefined) };
}

/** The file `prices update` writes and start-up reads. */
export function importedCatalogFile(loaded: LoadedConfig): string {
  return importedCatalogPath(loaded.dir, loaded.config.pricing?.catalog_file);
}

/** The prices of a deployment with a given imported catalog (`prices update` compares two of them). */
export function pricesInForce(
  loaded: LoadedConfig,
  providers: ProviderRegistry,
  imported: ImportedCatalog | undefined,
): PriceCatalog {
  return new PriceCatalog(loaded.config.pricing, {
    baseDir: loaded.dir,
    providerPrices: deployedProviderPrices(providers.list()),
    imported,
  });
}
