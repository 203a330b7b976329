import { createHash, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { ADMIN_LOCKOUT_DEFAULTS } from '../config/schema';
import { GatewayError } from '../core/errors';
import { addressKey, FailedKeyTracker, type LockoutOptions } from '../plugin-kit/lockout';
import { METRICS_PATH } from './metrics-route';

export interface AdminAuthOptions {
  /** The admin token: every admin route needs it. */
  token: string;
  /** The scrape-only token, accepted on GET /metrics alone. */
  scrapeToken?: string;
  /** Wrong-token lockout per client address (ADMIN_LOCKOUT_DEFAULTS unless given); false turns it off. */
  lockout?: Partial<LockoutOptions> | false;
  logger: Logger;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The admin token check: `Authorization: Bearer <token>` or `X-Admin-Token`, compared as SHA-256 digests (constant
 * time, and equal length whatever was sent). A client address that keeps presenting wrong tokens is blocked for a
 * while (429 auth_blocked with Retry-After); a missing token does not count against it.
 */
export function adminAuth({ token, scrapeToken, lockout, logger }: AdminAuthOptions): Koa.Middleware {
  const expected = digest(token);
  const scrape = scrapeToken === undefined ? undefined : digest(scrapeToken);
  const failures = lockout === false ? undefined : new FailedKeyTracker({ ...ADMIN_LOCKOUT_DEFAULTS, ...lockout });
  return async (ctx, next) => {
    const address = addressKey(ctx.req.socket.remoteAddress);
    const left = failures?.blockedFor(address) ?? 0;
    if (left > 0) throw adminBlocked(left);
    const bearer = /^Bearer (.+)$/i.exec(ctx.get('authorization'))?.[1];
    const presented = bearer ?? ctx.get('x-admin-token');
    const presentedDigest = presented ? digest(presented) : undefined;
    const scrapes =
      scrape !== undefined &&
      ctx.path === METRICS_PATH &&
      presentedDigest !== undefined &&
      timingSafeEqual(presentedDigest, scrape);
    if (!scrapes && (!presentedDigest || !timingSafeEqual(presentedDigest, expected))) {
      if (presentedDigest && failures) {
        const blockMs = failures.fail(address, presentedDigest.toString('base64').slice(0, 12));
        if (blockMs > 0) {
          logger.warn({ address, blockMs }, 'too many wrong admin tokens: client address blocked from the admin API');
          throw adminBlocked(blockMs);
        }
      }
      throw new GatewayError(
        'admin_token_invalid',
        'Missing or invalid admin token (Authorization: Bearer <token> or X-Admin-Token).',
      );
    }
    await next();
  };
}

function adminBlocked(leftMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(leftMs / 1000));
  return new GatewayError(
    'auth_blocked',
    `Too many wrong admin tokens from this address: blocked for ${seconds} more seconds.`,
    { headers: { 'retry-after': String(seconds) } },
  );
}
