import type { WorkspaceEntry } from '../config/schema';
import { generateGatewayKey, hashGatewayKey, KeyRing, type SyncedKey } from '../services/keys/key-ring';
import type { UsageStore } from '../storage/store';

/**
 * Builds the key ring from YAML (keys given as ${ENV} are hashed here and the plain value dropped) and from
 * the store (as synced keys: the key sync replaces them with every later view, so a key revoked right after
 * start is dropped by its first run). When no key exists at all, the first start creates one for the first
 * workspace, prints it once and keeps only its hash: a fresh `npm start` is usable at once and never open.
 */
export async function bootstrapKeys(
  workspaces: readonly WorkspaceEntry[],
  store: UsageStore,
  announce: (message: string) => void,
): Promise<KeyRing> {
  const ring = new KeyRing();
  const byId = new Map(workspaces.map((w) => [w.id, { id: w.id, name: w.name ?? w.id }]));
  for (const w of workspaces) {
    for (const k of w.keys) {
      const hash = k.sha256 ?? (k.key ? hashGatewayKey(k.key) : undefined);
      if (hash) ring.add(hash, { keyId: k.id, workspace: byId.get(w.id)! });
    }
  }
  const stored = await store.listKeys();
  const synced: SyncedKey[] = [];
  for (const k of stored) {
    const workspace = byId.get(k.workspaceId);
    if (workspace && k.revokedAt === null) synced.push({ hash: k.hash, keyId: k.id, workspace });
  }
  ring.replaceSynced(synced);
  if (ring.size === 0 && stored.length === 0) {
    const workspace = workspaces[0] ?? { id: 'default', name: 'default' };
    const key = generateGatewayKey();
    const id = `key_${hashGatewayKey(key).slice(0, 12)}`;
    await store.insertKey({
      id,
      workspaceId: workspace.id,
      label: 'created on first start',
      hash: hashGatewayKey(key),
    });
    ring.replaceSynced([
      {
        hash: hashGatewayKey(key),
        keyId: id,
        workspace: byId.get(workspace.id) ?? { id: workspace.id, name: workspace.id },
      },
    ]);
    announce(
      `\nTollgate created a gateway key for workspace "${workspace.id}". It is shown only this once; only its hash is kept:\n\n    ${key}\n\n` +
        `Send it as the X-Gateway-Key header. Set GATEWAY_KEY (or workspaces[].keys in gateway.config.yaml) to use your own.\n\n`,
    );
  }
  return ring;
}
