import { withJsonField, type GatewayContext } from '../../api';

/** The response header that says a cap was written into the request, with its value. */
export const CAP_APPLIED_HEADER = 'x-gateway-max-tokens-applied';
/** The tag stored with the request's record when a cap was written into it (gateway.* tags are the gateway's own). */
export const CAP_APPLIED_TAG = 'gateway.max_tokens_applied';

/**
 * Writes the workspace's cap into a request that named no output limit: `field` (the provider's own, e.g.
 * max_completion_tokens for OpenAI chat) is appended to the body, every other byte unchanged. The parsed body
 * follows, so the limits after this one (the budget's reservation) see the cap; the response header and the
 * record's tag say it was applied.
 */
export function capOutput(ctx: GatewayContext, field: string, cap: number): void {
  ctx.body = withJsonField(ctx.body!, ctx.json!, field, cap);
  ctx.bodySize = ctx.body.length;
  ctx.json![field] = cap;
  ctx.responseHeaders[CAP_APPLIED_HEADER] = String(cap);
  ctx.tags[CAP_APPLIED_TAG] = String(cap);
}
