import type { GatewayContext } from '../core/context';
import type { EndpointKey } from '../core/endpoints';
import type { ProviderModule } from '../core/provider-contract';

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
export function tokenCount(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  return Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : NaN;
}

/** The output-limit field each wire format defines, for a provider that declares none of its own. */
const WIRE_OUTPUT_LIMIT_FIELD: Partial<Record<EndpointKey, string>> = {
  'chat.completions': 'max_tokens',
  messages: 'max_tokens',
  responses: 'max_output_tokens',
};

/** The field a cap is written to for this provider and endpoint (undefined: the endpoint has no output limit). */
export function outputLimitField(
  provider: Pick<ProviderModule, 'outputLimitFields'> | undefined,
  endpoint: EndpointKey,
): string | undefined {
  return provider?.outputLimitFields?.[endpoint] ?? WIRE_OUTPUT_LIMIT_FIELD[endpoint];
}
