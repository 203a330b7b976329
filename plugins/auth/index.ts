import {
  addressKey,
  definePlugin,
  FailedKeyTracker,
  fromText,
  GatewayError,
  z,
  type GatewayContext,
  type GatewayPlugin,
  type KeyRingService,
} from '../../api';

const optionsSchema = z
  .strictObject({
    /** Distinct invalid gateway keys from one client address: after max_failures within window_ms its invalid keys get 429 for block_ms (valid keys never do). */
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
        client_address_header: z
          .string()
          .min(1)
          .transform((h) => h.toLowerCase())
          .optional(),
      })
      .prefault({}),
  })
  .prefault({});

type Options = z.output<typeof optionsSchema>;

/**
 * Validates X-Gateway-Key and sets the request's workspace and key id. Every request needs it: without a valid key nothing is
 * proxied.
 * The lockout refuses only invalid keys: behind a NAT or a shared egress proxy, one client guessing keys never locks
 * out the others, and keys of at least 24 characters (config security.allow_weak_keys) leave nothing to guess.
 */
export class AuthPlugin implements GatewayPlugin {
  readonly name = 'auth';

  /** Invalid keys per client address (undefined when lockout is off). */
  readonly failures: FailedKeyTracker | undefined;
  private readonly addressHeader: string | undefined;

  constructor(
    private readonly keys: KeyRingService,
    options: Options = optionsSchema.parse({}),
  ) {
    const o = options.lockout;
    this.failures = o.enabled
      ? new FailedKeyTracker({
          maxFailures: o.max_failures,
          windowMs: o.window_ms,
          blockMs: o.block_ms,
          maxAddresses: o.max_addresses,
        })
      : undefined;
    this.addressHeader = o.client_address_header;
  }

  onRequest(ctx: GatewayContext): void {
    const presented = this.keys.check(ctx);
    if (presented.status === 'missing') {
      throw new GatewayError(
        'gateway_key_missing',
        'Missing gateway key: send your Tollgate key in the X-Gateway-Key header.',
        { param: 'X-Gateway-Key' },
      );
    }
    if (presented.status === 'invalid') {
      if (this.failures) {
        const address = this.addressOf(ctx);
        const left = this.failures.blockedFor(address);
        if (left > 0) throw blocked(left);
        const blockMs = this.failures.fail(address, presented.fingerprint);
        if (blockMs > 0)
          ctx.log.warn(
            { address, blockMs },
            'too many invalid gateway keys: invalid keys from this client address blocked',
          );
      }
      throw new GatewayError('gateway_key_invalid', 'Invalid gateway key in X-Gateway-Key.', {
        param: 'X-Gateway-Key',
      });
    }
    // A valid key is always accepted, whatever other clients behind the same address did.
    ctx.workspace = presented.grant.workspace;
    ctx.keyId = presented.grant.keyId;
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
  return new GatewayError(
    'auth_blocked',
    `Too many invalid gateway keys from this address: invalid keys are refused for ${seconds} more seconds.`,
    {
      param: 'X-Gateway-Key',
      headers: { 'retry-after': String(seconds) },
    },
  );
}

export const auth = definePlugin({
  name: 'auth',
  inject: { keys: 'KeyRing' },
  optionsSchema,
  create: (_container, options, { keys }) => new AuthPlugin(keys, options),
});
