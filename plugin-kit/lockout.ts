/**
 * Slows down key guessing (gateway keys in the auth plugin, admin tokens in the admin API): distinct invalid keys
 * are counted per client address, and an address that sends `maxFailures` different invalid keys within `windowMs`
 * is blocked for `blockMs`. Guessing means trying many keys; a client that repeats one wrong key (a typo, a revoked
 * key, a new key polled until it is live) learns nothing new and is not blocked. Missing keys are not counted
 * either. What a block refuses is the caller's choice: the gateway-key check (plugins/auth) refuses only invalid
 * keys from a blocked address, so a valid key behind the same NAT keeps working; the admin API refuses every token
 * from it (admin/app.ts).
 *
 * In memory and bounded: at most `maxAddresses` addresses are tracked, each with at most `maxFailures` short
 * fingerprints of the keys it tried; beyond that the address that failed least recently is forgotten first.
 * Each gateway process counts on its own.
 */
export interface LockoutOptions {
  maxFailures: number;
  windowMs: number;
  blockMs: number;
  maxAddresses: number;
}

interface Entry {
  windowStart: number;
  /** Fingerprints of the distinct invalid keys tried in this window. */
  keys: Set<string>;
  /** Epoch ms until which the address is blocked; 0 when it is not. */
  blockedUntil: number;
}

export class FailedKeyTracker {
  /** Insertion order is failure recency: the first entry is the one to evict. */
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: LockoutOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Addresses tracked now (at most maxAddresses). */
  get size(): number {
    return this.entries.size;
  }

  /** How long the address stays blocked, in ms (0: not blocked). */
  blockedFor(address: string): number {
    const e = this.entries.get(address);
    if (!e || e.blockedUntil === 0) return 0;
    const left = e.blockedUntil - this.now();
    if (left > 0) return left;
    this.entries.delete(address); // the block is over: the address starts afresh
    return 0;
  }

  /**
   * Counts an invalid key (`fingerprint`: any stable short id of the presented key) from the address; returns the
   * block length when this failure blocked it, else 0.
   */
  fail(address: string, fingerprint: string): number {
    const now = this.now();
    let e = this.entries.get(address);
    if (e) this.entries.delete(address); // re-inserted below as the most recent
    if (!e || now - e.windowStart >= this.opts.windowMs || (e.blockedUntil !== 0 && e.blockedUntil <= now)) {
      e = { windowStart: now, keys: new Set(), blockedUntil: 0 };
    }
    if (e.blockedUntil === 0) e.keys.add(fingerprint);
    let blocked = 0;
    if (e.blockedUntil === 0 && e.keys.size >= this.opts.maxFailures) {
      e.keys.clear(); // not needed while blocked
      e.blockedUntil = now + this.opts.blockMs;
      blocked = this.opts.blockMs;
    }
    this.entries.set(address, e);
    while (this.entries.size > this.opts.maxAddresses) this.entries.delete(this.entries.keys().next().value as string);
    return blocked;
  }
}

/**
 * The key an address is tracked under: IPv4 as is (IPv4-mapped IPv6 unwrapped), IPv6 by its /64 prefix, the
 * block a single host or site usually gets (one key per full IPv6 address would let a client rotate freely).
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  let a = address.trim().toLowerCase();
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  if (a.startsWith('::ffff:') && a.includes('.')) return a.slice('::ffff:'.length);
  if (!a.includes(':')) return a;
  const [head, tail] = a.split('::', 2);
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = a.includes('::') ? [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
