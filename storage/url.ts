/**
 * Storage URLs (config storage.url), read without opening anything, so the config schema can refuse a URL
 * that no store would open:
 *   sqlite:<path> | sqlite::memory: | <plain file path>  -> SQLite
 *   postgres://... | postgresql://...                    -> PostgreSQL
 */

export type StorageTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export function parseStorageUrl(url: string): StorageTarget {
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
  if (/^sqlite:/i.test(url)) {
    // sqlite:./a.db, sqlite:/abs/a.db, sqlite:///abs/a.db, sqlite::memory:
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new Error('sqlite storage URL needs a path, e.g. sqlite:./data/tollgate.db');
    return { kind: 'sqlite', path };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(`unsupported storage URL scheme "${url.split(':')[0]}": use sqlite:<path> or postgres://...`);
  }
  if (!url) throw new Error('storage URL is empty');
  return { kind: 'sqlite', path: url };
}

/** The URL with its password masked, for messages (a PostgreSQL URL may carry one). */
export function redactStorageUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
  }
}
