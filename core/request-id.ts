import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-gateway-request-id';

/**
 * A new request id (also the usage record's primary key): a UUIDv7 (RFC 9562), whose first 48 bits are the
 * Unix time in ms, so the stores' id indexes grow at their end instead of at random places and inserts stay
 * cheap as the table grows. The random bits come from randomUUID (a CSPRNG Node draws in batches).
 */
export function newRequestId(): string {
  const ms = Date.now().toString(16).padStart(12, '0');
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx: keep its variant and random bits
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${random.slice(15)}`;
}
