/** Opens the store named by a storage URL (config storage.url, see ./url.ts) and brings its schema up to date. */
import { existsSync } from 'node:fs';
import { PostgresUsageStore, type PostgresStoreOptions } from './postgres-store';
import { sqliteFileHasSchema, SqliteUsageStore, type SqliteStoreOptions } from './sqlite-store';
import type { UsageStore } from './store';
import { parseStorageUrl, redactStorageUrl } from './url';

export { parseStorageUrl, redactStorageUrl } from './url';

export interface OpenStoreOptions extends SqliteStoreOptions, PostgresStoreOptions {
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  /**
   * Open a Tollgate database that exists already, creating nothing (a command that only reads, where a mistyped
   * path must not leave an empty database behind): StoreNotFoundError otherwise. One that exists is migrated.
   */
  mustExist?: boolean;
}

/** No Tollgate database where the storage URL points (only with mustExist). */
export class StoreNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreNotFoundError';
  }
}

export async function openStore(url: string, opts: OpenStoreOptions = {}): Promise<UsageStore> {
  const target = parseStorageUrl(url);
  if (opts.mustExist && target.kind === 'sqlite' && target.path !== ':memory:') {
    if (!existsSync(target.path)) throw new StoreNotFoundError(`no database at ${target.path}`);
    if (!sqliteFileHasSchema(target.path)) throw new StoreNotFoundError(`no Tollgate tables in ${target.path}`);
  }
  const store =
    target.kind === 'postgres' ? new PostgresUsageStore(target.url, opts) : new SqliteUsageStore(target.path, opts);
  try {
    if (opts.mustExist && store instanceof PostgresUsageStore && !(await store.hasSchema())) {
      throw new StoreNotFoundError(
        `no Tollgate tables in ${redactStorageUrl(url)}${opts.schema ? ` (schema ${opts.schema})` : ''}`,
      );
    }
    if (opts.migrate !== false) await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}
