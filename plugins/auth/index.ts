import { hash } from 'node:crypto';
import { z } from 'zod';
import { fromText } from '../../config/from-text';
import { credentialHeader, type GatewayContext } from '../../core/context';
import { GatewayError } from '../../core/errors';
import { definePlugin, type GatewayPlugin } from '../../core/plugin-contract';
import { resolveService, TOKENS, type KeyRingService } from '../../core';
import { addressKey, FailedKeyTracker } from './lockout';

const optionsSchema = z
  .strictObject({
    /** Distinct invalid gateway keys from one client address: after max_failures within window_ms it is blocked for block_ms. */
    lockout: z
      .strictObject({
        enabled: fromText(z.boolean()).default(true),
        max_failures: fromText(z.number().int().min(1)).default(10),
        window_ms: fromText(z.number().int().min(1)).default(60_000),
        block_ms: fromText(z.number().int().min(1)).default(300_000),
        /** Addresses tracked at most (memory bound); the least recently failing one is forgotten first. */
        max_addresses: fromText(z.number().int().min(1).max(10_000_000)).default(10_000),
        /**
         * Only behind a reverse proxy you trust: the header it sets with the client's address (e.g. x-forwarded-for,
         * whose last entry is used). Otherwise the TCP peer is used; a client could forge the header.
         */
        client_address_header: z.string().min(1).transform((h) => h.toLowerCase()).optional(),
      })
      .prefault({}),
  })
  .prefault({});

type Options = z.output<typeof optionsSchema>;

/** Validates X-Gateway-Key and sets the request's workspace and key id. Every request needs it: without a valid key nothing is proxied. */
export class AuthPlugin implements GatewayPlugin {
  readonly name = 'auth';

  /** Invalid keys per client address (undefined when lockout is off). */
  readonly failures: FailedKeyTracker | undefined;
  private readonly addressHeader: string | undefined;

  constructor(private readonly keys: KeyRingService, options: Options = optionsSchema.parse({})) {
    const o = options.lockout;
    this.failures = o.enabled ? new FailedKeyTracker({ maxFailures: o.max_failures, windowMs: o.window_ms, blockMs: o.block_ms, maxAddresses: o.max_addresses }) : undefined;
    this.addressHeader = o.client_address_header;
  }

  onRequest(ctx: GatewayContext): void {
    // Nothing is tracked in the usual case (no invalid key lately): the address is only worked out when needed.
    const tracked = this.failures !== undefined && this.failures.size > 0;
    let address = tracked ? this.addressOf(ctx) : undefined;
    if (address !== undefined) {
      const left = this.failures!.blockedFor(address);
      if (left > 0) throw blocked(left);
    }
    const presented = credentialHeader(ctx, 'x-gateway-key');
    if (!presented) {
      throw new GatewayError('gateway_key_missing', 'Missing gateway key: send your Tollgate key in the X-Gateway-Key header.', { param: 'X-Gateway-Key' });
    }
    const grant = this.keys.verify(presented);
    if (!grant) {
      if (this.failures) address ??= this.addressOf(ctx);
      if (address !== undefined) {
        const blockMs = this.failures!.fail(address, hash('sha256', presented, 'base64').slice(0, 12));
        if (blockMs > 0) ctx.log.warn({ address, blockMs }, 'too many invalid gateway keys: client address blocked');
      }
      throw new GatewayError('gateway_key_invalid', 'Invalid gateway key in X-Gateway-Key.', { param: 'X-Gateway-Key' });
    }
    ctx.workspace = grant.workspace;
    ctx.keyId = grant.keyId;
  }

  /** The tracked form of the client's address: the TCP peer, or the trusted proxy's header when configured. */
  private addressOf(ctx: GatewayContext): string {
    if (this.addressHeader) {
      const forwarded = ctx.header(this.addressHeader)?.split(',').at(-1)?.trim();
      if (forwarded) return addressKey(forwarded);
    }
    return addressKey(ctx.clientAddress);
  }
}

function blocked(leftMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(leftMs / 1000));
  return new GatewayError('auth_blocked', `Too many invalid gateway keys from this address: blocked for ${seconds} more seconds.`, {
    param: 'X-Gateway-Key', headers: { 'retry-after': String(seconds) },
  });
}

export const auth = definePlugin({
  name: 'auth',
  requires: { services: ['KeyRing'] },
  optionsSchema,
  create: (container, options) => new AuthPlugin(resolveService(container, TOKENS.KeyRing), options),
});
