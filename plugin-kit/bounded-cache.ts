/**
 * A map with a size bound for values that are cheap to recompute and repeat a lot (a client sends the same
 * metadata header on every call, requests fall under the same few limit scopes). Two generations of `generation`
 * entries each: when the young one fills up, the old one is dropped and the young one becomes old; an entry read
 * from the old generation moves back to the young one, so entries in use stay. No timers, O(1) per call.
 */
export class BoundedCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();

  constructor(private readonly generation = 1000) {}

  get(key: K): V | undefined {
    const hit = this.young.get(key);
    if (hit !== undefined) return hit;
    const aged = this.old.get(key);
    if (aged !== undefined) this.set(key, aged);
    return aged;
  }

  set(key: K, value: V): void {
    if (this.young.size >= this.generation) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
  }
}
