import type { GatewayContext } from './context';
import type { EndpointKey } from './endpoints';

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
