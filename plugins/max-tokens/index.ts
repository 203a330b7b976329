import type { GatewayContext } from '../../core/context';
import { GatewayError } from '../../core/errors';
import { definePlugin, type GatewayPlugin } from '../../core/plugin-contract';
import type { EndpointKey } from '../../core/usage';
import { LimitsContext } from '../../runtime/services/workspace-limits';

/** The body fields that ask for output tokens, per endpoint. */
export const OUTPUT_TOKEN_FIELDS: Partial<Record<EndpointKey, readonly string[]>> = {
  'chat.completions': ['max_tokens', 'max_completion_tokens'],
  messages: ['max_tokens'],
  responses: ['max_output_tokens'],
};

/**
 * The largest output-token count a request asks for: undefined when it names none (absent or null), NaN when a
 * field holds anything but a non-negative integer (e.g. the string "100000").
 */
export function requestedOutputTokens(ctx: GatewayContext): number | undefined {
  const fields = ctx.endpoint ? OUTPUT_TOKEN_FIELDS[ctx.endpoint.key] : undefined;
  let max: number | undefined;
  for (const f of fields ?? []) {
    const n = tokenCount(ctx.json?.[f]);
    if (n !== undefined) max = Math.max(max ?? 0, n); // NaN wins
  }
  return max;
}

/** One output-token field: undefined when absent or null, NaN when not a non-negative integer. */
function tokenCount(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  return Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : NaN;
}

/**
 * Refuses a request that asks for more output tokens than the workspace's cap. It never rewrites the request.
 * Where a cap applies, each output-token field must be a non-negative integer (a string such as "100000" would
 * slip past a numeric comparison), and /v1/messages must name max_tokens: the spec makes it required there and
 * a missing value cannot be checked against the cap. Without a cap the body is left to the provider.
 */
export class MaxTokensPlugin implements GatewayPlugin {
  readonly name = 'max-tokens';

  constructor(private readonly limits: LimitsContext) {}

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
  create: (container) => new MaxTokensPlugin(LimitsContext.from(container)),
});
