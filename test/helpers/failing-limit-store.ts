import type { LimitStore } from '../../contracts/limit-store';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';

/** An in-memory limit store whose given operations fail as an unreachable Redis would; the others work. */
export function failingLimitStore(...operations: (keyof LimitStore)[]): MemoryLimitStore {
  const store = new MemoryLimitStore();
  for (const op of operations) {
    (store as unknown as Record<string, () => Promise<never>>)[op] = async () =>
      Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
  }
  return store;
}
