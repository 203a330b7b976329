import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayContext } from '../../core/context';
import { checkPresentedKey, type PresentedKey } from '../../contracts/presented-key';
import type { KeyGrant, KeyRingService } from '../../contracts/services';

/** Gateway keys look like tg_<43 base64url chars>: recognisable in a leak scan, 256 bits of randomness. */
export const KEY_PREFIX = 'tg_';

export function generateGatewayKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 hex of a key. Keys are random 256-bit values, so a fast hash is safe (no dictionary to guess from). */
export function hashGatewayKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

interface Entry extends KeyGrant {
  digest: Buffer;
}

/** A key kept in sync with the key stores (usage store, Redis): its hash and what it grants. */
export interface SyncedKey extends KeyGrant {
  hash: string;
}

/**
 * The valid gateway keys, held only as hashes. A presented key is hashed and looked up by its hash; the
 * final comparison is constant-time. Looking up by hash leaks nothing useful: an attacker cannot choose
 * inputs whose hash shares a prefix with a stored one.
 *
 * Two kinds of keys: configured ones (YAML, for the life of the process) and synced ones (usage store and
 * Redis), which the key sync adds and drops one change at a time: the work of a change does not grow with the
 * number of keys.
 */
export class KeyRing implements KeyRingService {
  private readonly configured = new Map<string, Entry>();
  /** Synced keys by key id. */
  private readonly synced = new Map<string, Entry>();
  /** Configured and synced keys by hash (a configured key wins a shared hash), so verify() is one lookup. */
  private byHash = new Map<string, Entry>();
  /** Key ids used since the last takeUsed(), for the batched last-used update. */
  private used = new Set<string>();

  /** A configured key. */
  add(hashHex: string, grant: KeyGrant): void {
    const entry = entryOf(hashHex, grant);
    this.configured.set(entry.digest.toString('hex'), entry);
    this.byHash.set(entry.digest.toString('hex'), entry);
  }

  /** Replaces every synced key with `keys`. */
  replaceSynced(keys: Iterable<SyncedKey>): void {
    this.synced.clear();
    this.byHash = new Map(this.configured);
    for (const k of keys) this.setSynced(k);
  }

  /** Adds the synced key `k.keyId`, or replaces what it was. */
  setSynced(k: SyncedKey): void {
    this.dropSynced(k.keyId);
    const entry = entryOf(k.hash, k);
    const hex = entry.digest.toString('hex');
    this.synced.set(k.keyId, entry);
    if (!this.byHash.has(hex)) this.byHash.set(hex, entry);
  }

  /** Removes the synced key `keyId` (a configured key of the same hash stays valid). */
  dropSynced(keyId: string): void {
    const entry = this.synced.get(keyId);
    if (!entry) return;
    this.synced.delete(keyId);
    const hex = entry.digest.toString('hex');
    if (this.byHash.get(hex) !== entry) return;
    const configured = this.configured.get(hex);
    if (configured) this.byHash.set(hex, configured);
    else this.byHash.delete(hex);
  }

  takeUsed(): string[] {
    const ids = [...this.used];
    this.used = new Set();
    return ids;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** True when `presented` is a valid gateway key; unlike verify() it does not count as the key's use. */
  holds(presented: string): boolean {
    const digest = hash('sha256', presented, 'buffer');
    const entry = this.byHash.get(digest.toString('hex'));
    return entry !== undefined && timingSafeEqual(entry.digest, digest);
  }

  verify(presented: string): KeyGrant | undefined {
    const digest = hash('sha256', presented, 'buffer'); // one-shot: no Hash object per request
    const entry = this.byHash.get(digest.toString('hex'));
    if (!entry || !timingSafeEqual(entry.digest, digest)) return undefined;
    this.used.add(entry.keyId);
    return entry;
  }

  check(ctx: GatewayContext): PresentedKey {
    return checkPresentedKey(ctx, this);
  }
}

function entryOf(hashHex: string, grant: KeyGrant): Entry {
  return { keyId: grant.keyId, workspace: grant.workspace, digest: Buffer.from(hashHex.toLowerCase(), 'hex') };
}
