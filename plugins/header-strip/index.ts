import { definePlugin, z, type GatewayContext, type GatewayPlugin } from '../../api';

const optionsSchema = z
  .strictObject({
    /** Further request headers never to forward (lower-case), e.g. cookie or x-forwarded-for. */
    remove: z
      .array(
        z
          .string()
          .min(1)
          .transform((s) => s.toLowerCase()),
      )
      .default([]),
  })
  .prefault({});

/** Removes every X-Gateway-* header (and any configured extra) before the request goes upstream: the provider never sees the gateway key. */
export class HeaderStripPlugin implements GatewayPlugin {
  readonly name = 'header-strip';
  private readonly remove: ReadonlySet<string>;

  constructor(remove: readonly string[]) {
    this.remove = new Set(remove);
  }

  beforeUpstream(ctx: GatewayContext): void {
    const headers = ctx.upstreamHeaders;
    for (const name in headers) {
      if (name.startsWith('x-gateway-') || this.remove.has(name)) delete headers[name];
    }
  }
}

export const headerStrip = definePlugin({
  name: 'header-strip',
  optionsSchema,
  create: (_container, options) => new HeaderStripPlugin(options.remove),
});
