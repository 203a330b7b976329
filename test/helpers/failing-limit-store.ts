import type { LimitStore } from '../../contracts/limit-store';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';

/**
 * An in-memory limit store whose given operations fail as an unreachable Redis would; the others work. An
 * operation the store also answers at once (MemoryLimitStore.immediate) fails there too, by throwing.
 */
export function failingLimitStore(...operations: (keyof LimitStore)[]): MemoryLimitStore {
  const store = new MemoryLimitStore();
  const unreachable = () => new Error('connect ECONNREFUSED 127.0.0.1:6379');
  const immediate: Record<string, unknown> = { ...store.immediate };
  for (const op of operations) {
    (store as unknown as Record<string, () => Promise<never>>)[op] = async () => Promise.reject(unreachable());
    if (op in immediate)
      immediate[op] = () => {
        throw unreachable();
      };
  }
  (store as unknown as { immediate: unknown }).immediate = immediate;
  return store;
}
