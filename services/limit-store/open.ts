import type { Logger } from 'pino';
import type { LimitStoreConfig } from '../../config/limits';
import type { LimitStore } from '../../contracts/limit-store';
import { MemoryLimitStore } from './memory-store';
import { RedisLimitStore } from './redis-store';

/** In memory for one instance; Redis when redis_url is set, so every instance enforces the same limits. */
export function openLimitStore(config: LimitStoreConfig, log: Logger): LimitStore {
  if (!config.redis_url) return new MemoryLimitStore();
  let lastLogged = 0;
  const onError = (err: Error) => {
    // ioredis reports every failed reconnect: log the connection trouble at most every 10 s.
    if (Date.now() - lastLogged < 10_000) return;
    lastLogged = Date.now();
    log.warn({ err: err.message }, 'limit store (Redis) connection error');
  };
  return new RedisLimitStore(config.redis_url, {
    keyPrefix: config.key_prefix,
    circuitBreakerMs: config.circuit_breaker_ms,
    onError,
  });
}
