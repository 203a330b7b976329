import {
  definePlugin,
  GatewayError,
  OUTPUT_TOKEN_FIELDS,
  outputLimitField,
  tokenCount,
  type GatewayContext,
  type GatewayPlugin,
  type WorkspaceLimitsService,
} from '../../api';
import { capOutput } from './cap-output';

/**
 * Holds a request to the workspace's output-token cap (limits.max_tokens). A request that asks for more is
 * refused, never rewritten. Each output-token field it names must be a non-negative integer (a string such as
 * "100000" would slip past a numeric comparison). A request that names none is, by limits.max_tokens_when_absent:
 * capped (default: the provider's own output-limit field is set to the cap, see cap-output.ts), refused, or let
 * through as is. Without a cap the body is left to the provider.
 */
export class MaxTokensPlugin implements GatewayPlugin {
  readonly name = 'max-tokens';

  constructor(private readonly limits: WorkspaceLimitsService) {}

  beforeUpstream(ctx: GatewayContext): void {
    const limits = this.limits.limitsOf(ctx);
    const cap = limits?.max_tokens;
    const endpoint = ctx.endpoint?.key;
    const fields = endpoint ? OUTPUT_TOKEN_FIELDS[endpoint] : undefined;
    if (!limits || cap === undefined || !fields || !ctx.json) return;
    let named = false;
    for (const field of fields) {
      const n = tokenCount(ctx.json[field]);
      if (n === undefined) continue;
      named = true;
      if (Number.isNaN(n)) {
        throw new GatewayError(
          'invalid_body',
          `${field} must be a non-negative integer, got ${JSON.stringify(ctx.json[field]).slice(0, 40)}.`,
          { param: field },
        );
      }
      if (n > cap) {
        throw new GatewayError(
          'max_tokens_exceeded',
          `${field} is ${n}, above this workspace's cap of ${cap}. Ask for ${cap} or fewer.`,
          { param: field },
        );
      }
    }
    if (named || limits.max_tokens_when_absent === 'allow') return;
    const field = outputLimitField(ctx.provider, endpoint!)!;
    if (limits.max_tokens_when_absent === 'reject') {
      throw new GatewayError(
        'max_tokens_required',
        `This workspace caps output at ${cap} tokens: name ${field} (at most ${cap}) in the request.`,
        { param: field },
      );
    }
    capOutput(ctx, field, cap);
  }
}

export const maxTokens = definePlugin({
  name: 'max-tokens',
  requires: { plugins: ['auth'] },
  inject: { limits: 'WorkspaceLimits' },
  enforces: ['max_tokens'],
  // The cap it writes into a request is what the budget reserves.
  order: { after: ['attribution'], before: ['budget'] },
  create: (_container, _options, { limits }) => new MaxTokensPlugin(limits),
});
