import type { LoadedConfig } from '../config/load';
import { PriceCatalog } from '../pricing/catalog';
import { checkPlugins } from './loading/plugin-list';
import { loadProviders } from './loading/deployed-providers';
import { loadProviderModules } from './loading/provider-module-import';

/**
 * Everything start-up would refuse, checked without opening a store or a port: provider modules load and
 * their prefixes do not clash, plugins load, fit together (their declared dependencies, order and limits) and
 * have valid options, prices parse.
 */
export async function checkWiring(loaded: LoadedConfig): Promise<void> {
  const { config } = loaded;
  loadProviders(config, await loadProviderModules(config.providers, loaded.dir));
  await checkPlugins(config, loaded.dir);
  new PriceCatalog(config.pricing, { baseDir: loaded.dir });
}
