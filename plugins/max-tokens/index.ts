import { definePlugin, GatewayError, resolveService, TOKENS, type GatewayContext, type GatewayPlugin, type WorkspaceLimitsService } from '../../core';
import { OUTPUT_TOKEN_FIELDS, tokenCount } from '../../core/output-tokens';

/**
 * Refuses a request that asks for more output tokens than the workspace's cap. It never rewrites the request.
 * Where a cap applies, each output-token field must be a non-negative integer (a string such as "100000" would
 * slip past a numeric comparison), and /v1/messages must name max_tokens: Anthropic's API requires it there and
 * a missing value cannot be checked against the cap. Without a cap the body is left to the provider.
 */
export class MaxTokensPlugin implements GatewayPlugin {
  readonly name = 'max-tokens';

  constructor(private readonly limits: WorkspaceLimitsService) {}

  beforeUpstream(ctx: GatewayContext): void {
    const cap = this.limits.limitsOf(ctx)?.max_tokens;
    const fields = ctx.endpoint ? OUTPUT_TOKEN_FIELDS[ctx.endpoint.key] : undefined;
    if (cap === undefined || !fields || !ctx.json) return;
    if (ctx.endpoint!.key === 'messages' && (ctx.json.max_tokens === undefined || ctx.json.max_tokens === null)) {
      throw new GatewayError('invalid_body', `max_tokens is required on /v1/messages; this workspace allows at most ${cap}.`, { param: 'max_tokens' });
    }
    for (const field of fields) {
      const n = tokenCount(ctx.json[field]);
      if (n === undefined) continue;
      if (Number.isNaN(n)) {
        throw new GatewayError('invalid_body', `${field} must be a non-negative integer, got ${JSON.stringify(ctx.json[field]).slice(0, 40)}.`, { param: field });
      }
      if (n > cap) {
        throw new GatewayError('max_tokens_exceeded', `${field} is ${n}, above this workspace's cap of ${cap}. Ask for ${cap} or fewer.`, { param: field });
      }
    }
  }
}

export const maxTokens = definePlugin({
  name: 'max-tokens',
  requires: { plugins: ['auth'], services: ['WorkspaceLimits'] },
  enforces: ['max_tokens'],
  create: (container) => new MaxTokensPlugin(resolveService(container, TOKENS.WorkspaceLimits)),
});
