import { hash } from 'node:crypto';
import { credentialHeader, type GatewayContext } from '../core/context';
import type { KeyGrant } from './services';

/**
 * What the gateway key a request presented (X-Gateway-Key) amounts to. The key itself never leaves the core: an
 * invalid one is known by a fingerprint (12 base64 characters of its SHA-256), enough to count distinct guesses.
 */
export type PresentedKey =
  | { readonly status: 'missing' }
  | { readonly status: 'invalid'; readonly fingerprint: string }
  | { readonly status: 'valid'; readonly grant: KeyGrant };

const MISSING: PresentedKey = Object.freeze({ status: 'missing' });

/** Checks the request's X-Gateway-Key with `keys.verify`, for KeyRingService.check. */
export function checkPresentedKey(
  ctx: GatewayContext,
  keys: { verify(presented: string): KeyGrant | undefined },
): PresentedKey {
  const presented = credentialHeader(ctx, 'x-gateway-key');
  if (!presented) return MISSING;
  const grant = keys.verify(presented);
  return grant
    ? { status: 'valid', grant }
    : { status: 'invalid', fingerprint: hash('sha256', presented, 'base64').slice(0, 12) };
}
