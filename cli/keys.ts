import type { Command } from 'commander';
import type { LoadedConfig } from '../config/load';
import { readFileSync } from 'node:fs';
import { createGatewayKeys, keyJson, type NewKeyInput } from '../admin/key-admin';
import { declaredKeys } from '../admin/key-list';
import { SharedKeys } from '../services/keys/shared-keys';
import { CLI_KEYS_MAX, importedKeys, positiveCount } from './key-import';
import type { GatewayKey } from '../storage/store';
import { UserError } from './errors';
import { withStore } from './store';
import { renderTable } from './table';

/** `tollgate keys create|import|list|revoke`: the same operations as the admin API's /api/keys, on the store directly. */
export function registerKeyCommands(program: Command, load: () => LoadedConfig): void {
  const keys = program
    .command('keys')
    .description('manage gateway keys (stored hashed; a key is shown once at creation)');

  keys
    .command('create')
    .description('create a key (or --count keys, in one transaction) and print it once')
    .option('-w, --workspace <id>', 'workspace (default: the first in the config)')
    .option('-l, --label <text>', 'a label to recognise the key by')
    .option('-n, --count <n>', `create this many keys, 1-${CLI_KEYS_MAX}, one per line`, positiveCount, 1)
    .option('--json', 'print the key and its record as JSON (the fields of POST /api/keys; one line per key)')
    .action((opts: CreateOptions) => createKeys(load(), opts));

  keys
    .command('import <file>')
    .description('store keys you already hand out (JSON lines or a JSON array: key or sha256, workspace, label, id)')
    .option('--json', 'print the stored keys as JSON (the fields of GET /api/keys, never the keys)')
    .action(async (file: string, opts: { json?: boolean }) => {
      const loaded = load();
      const rows = importedKeys(readFileSync(file, 'utf8'), loaded.config.workspaces);
      const stored = await withStore(loaded, (store) => store.insertKeys(rows));
      await share(loaded, stored);
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ imported: stored.map(keyJson) }, null, 2)}\n`
          : `Imported ${stored.length} keys\n`,
      );
    });

  keys
    .command('list')
    .description('list keys, those in the store then those of the config file (never the keys themselves)')
    .option('-w, --workspace <id>', 'only this workspace')
    .option('--json', 'print the keys as JSON (the fields of GET /api/keys)')
    .action((opts: { workspace?: string; json?: boolean }) => listKeys(load(), opts));

  keys
    .command('revoke <id>')
    .description('revoke a key: every running instance refuses it within a second')
    .option('--json', 'print the result as JSON (the fields of DELETE /api/keys/{id})')
    .action(async (id: string, opts: { json?: boolean }) => {
      const loaded = load();
      const record = await withStore(
        loaded,
        async (store) => ((await store.revokeKey(id)) ? (await store.listKeys()).find((k) => k.id === id) : undefined),
        { mustExist: true },
      );
      if (!record) throw new UserError(`no active key with id ${id} (tollgate keys list shows them)`);
      await share(loaded, [record]);
      process.stdout.write(opts.json ? `${JSON.stringify({ id, revoked: true })}\n` : `Revoked ${id}\n`);
    });
}

interface CreateOptions {
  workspace?: string;
  label?: string;
  count: number;
  json?: boolean;
}

/** `keys create`: one key, or --count keys in one transaction, each printed once. */
async function createKeys(loaded: LoadedConfig, opts: CreateOptions): Promise<void> {
  const input = { workspace: opts.workspace, label: opts.label };
  const created = await withStore(loaded, (store) =>
    createGatewayKeys(store, loaded.config.workspaces, Array<NewKeyInput>(opts.count).fill(input)),
  );
  await share(
    loaded,
    created.map((c) => c.record),
  );
  if (opts.json) {
    for (const { key, record } of created)
      process.stdout.write(`${JSON.stringify({ ...keyJson(record), source: 'store', key })}\n`);
    return;
  }
  if (created.length > 1) {
    process.stderr.write(
      `Created ${created.length} keys for workspace ${created[0].record.workspaceId}; copy them now, they are not shown again.\n`,
    );
    for (const { key, record } of created) process.stdout.write(`${record.id}\t${key}\n`);
    return;
  }
  const { key, record } = created[0];
  process.stdout.write(
    `Created key ${record.id} for workspace ${record.workspaceId}. Copy it now, it is not shown again:\n\n    ${key}\n\n`,
  );
}

/**
 * With limit_store.redis_url set, a created or revoked key is published through Redis at once, so instances with
 * usage stores of their own apply it too. Without Redis (or when it cannot be reached) the instances that share
 * this usage store pick the change up from it within a second.
 */
async function share(loaded: LoadedConfig, changed: readonly GatewayKey[]): Promise<void> {
  const { redis_url: url, key_prefix: prefix } = loaded.config.limit_store;
  if (!url) return;
  const shared = new SharedKeys(url, prefix);
  try {
    await shared.publish(
      changed.map((k) => ({ id: k.id, hash: k.hash, workspaceId: k.workspaceId, revoked: k.revokedAt !== null })),
    );
  } catch (err) {
    process.stderr.write(
      `tollgate: warning: could not publish the change through Redis (${(err as Error).message}); instances sharing this usage store still apply it within a second\n`,
    );
  } finally {
    await shared.close();
  }
}

/** `keys list`: the keys in the store, then those declared in the config file, as GET /api/keys lists them. */
async function listKeys(loaded: LoadedConfig, opts: { workspace?: string; json?: boolean }): Promise<void> {
  const stored = (await withStore(loaded, (store) => store.listKeys(opts.workspace), { mustExist: true })).map((k) => ({
    ...keyJson(k),
    source: 'store' as const,
  }));
  const list = [...stored, ...declaredKeys(loaded.config.workspaces, opts.workspace)];
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    return;
  }
  const rows = list.map((k) => [
    k.id,
    k.workspace,
    k.label || '-',
    k.source,
    k.created_at ?? '-',
    k.source === 'config' ? '-' : (k.last_used_at ?? 'never'),
    k.revoked ? `revoked ${k.revoked_at}` : 'active',
  ]);
  const columns = ['id', 'workspace', 'label', 'source', 'created', 'last used', 'status'].map((header) => ({
    header,
  }));
  process.stdout.write(`${renderTable(columns, rows)}\n`);
}
