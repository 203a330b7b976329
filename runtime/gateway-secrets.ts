import { hash, timingSafeEqual } from 'node:crypto';
import type { GatewaySecretCheck } from '../core/credentials';
import type { KeyRing } from '../services/keys/key-ring';

/**
 * The gateway's own secrets as the proxy checks them before forwarding a credential header: any valid gateway key
 * and the admin token (compared by SHA-256 digest, in constant time). Such a value in Authorization or x-api-key
 * is a client's mistake, and is never sent to a provider.
 */
export function gatewaySecretCheck(keys: KeyRing, adminToken: string | undefined): GatewaySecretCheck {
  const admin = adminToken ? hash('sha256', adminToken, 'buffer') : undefined;
  return (value) => {
    if (admin && timingSafeEqual(hash('sha256', value, 'buffer'), admin)) return true;
    return keys.holds(value);
  };
}
