import type { LoadedConfig } from '../config/load';
import { storageUrlFrom } from '../runtime/gateway';
import { openStore } from '../storage';
import type { UsageStore } from '../storage/store';

/** Opens the configured store for one CLI command and closes it afterwards. */
export async function withStore<T>(loaded: LoadedConfig, fn: (store: UsageStore) => Promise<T>): Promise<T> {
  const store = await openStore(storageUrlFrom(loaded.config.storage.url, loaded.dir), { schema: loaded.config.storage.schema });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
