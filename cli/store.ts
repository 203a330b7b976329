import { resolve } from 'node:path';
import type { LoadedConfig } from '../config/load';
import { openStore, parseStorageUrl, redactStorageUrl, StoreNotFoundError } from '../storage';
import type { UsageStore } from '../storage/store';
import { errorLine, UserError } from './errors';

export interface StoreUse {
  /**
   * The command only makes sense on a database that exists (it reads, or changes what is there): it creates
   * none, so a mistyped path is an error naming it instead of a new empty database.
   */
  mustExist?: boolean;
}

/** The storage URL with a relative SQLite path resolved against the config file's folder (as `start` does). */
function storageUrl(loaded: LoadedConfig): string {
  const url = loaded.config.storage.url;
  const target = parseStorageUrl(url);
  return target.kind === 'sqlite' && target.path !== ':memory:' ? `sqlite:${resolve(loaded.dir, target.path)}` : url;
}

/**
 * Opens the configured store for one CLI command and closes it afterwards. A store that cannot be opened
 * (missing, unreachable, refused) is a UserError naming it.
 */
export async function withStore<T>(
  loaded: LoadedConfig,
  fn: (store: UsageStore) => Promise<T>,
  use: StoreUse = {},
): Promise<T> {
  const url = storageUrl(loaded);
  let store: UsageStore;
  try {
    // The CLI writes no usage records: no writer thread.
    store = await openStore(url, {
      schema: loaded.config.storage.schema,
      mustExist: use.mustExist,
      writerThread: false,
    });
  } catch (err) {
    if (err instanceof StoreNotFoundError) {
      const hint =
        parseStorageUrl(url).kind === 'sqlite'
          ? 'check the path, or start the gateway once to create it'
          : 'check storage.url and storage.schema, or start the gateway once to create them';
      throw new UserError(`${err.message} (storage.url in ${loaded.path}): ${hint}`, { cause: err });
    }
    throw new UserError(`cannot open the database ${redactStorageUrl(url)}: ${errorLine(err)}`, { cause: err });
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
