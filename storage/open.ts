/**
 * Opens the store named by a storage URL (config storage.url) and brings its schema up to date.
 *   sqlite:<path> | sqlite::memory: | <plain file path>  -> SQLite
 *   postgres://... | postgresql://...                    -> PostgreSQL
 */
import { PostgresUsageStore, type PostgresStoreOptions } from './postgres-store';
import { SqliteUsageStore, type SqliteStoreOptions } from './sqlite-store';
import type { UsageStore } from './store';

export interface OpenStoreOptions extends SqliteStoreOptions, PostgresStoreOptions {
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
}

export type StorageTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export function parseStorageUrl(url: string): StorageTarget {
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
  if (/^sqlite:/i.test(url)) {
    // sqlite:./a.db, sqlite:/abs/a.db, sqlite:///abs/a.db, sqlite::memory:
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new Error('sqlite storage URL needs a path, e.g. sqlite:./data/tollgate.db');
    return { kind: 'sqlite', path };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new Error(`unsupported storage URL scheme: ${url.split(':')[0]}`);
  if (!url) throw new Error('storage URL is empty');
  return { kind: 'sqlite', path: url };
}

export async function openStore(url: string, opts: OpenStoreOptions = {}): Promise<UsageStore> {
  const target = parseStorageUrl(url);
  const store = target.kind === 'postgres' ? new PostgresUsageStore(target.url, opts) : new SqliteUsageStore(target.path, opts);
  if (opts.migrate !== false) {
    try {
      await store.migrate();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }
  return store;
}
