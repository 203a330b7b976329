/**
 * on_exceed clamp (action: clamp): a request whose reservation does not fit has its output-token limit lowered to
 * what the budget has left, instead of being refused. The clamped limit is what admission reserves, so the
 * reservation still bounds the request's cost and concurrent requests cannot push the spend past the limit.
 */
import {
  OUTPUT_TOKEN_FIELDS,
  outputLimitField,
  requestedOutputTokens,
  tokenCount,
  withJsonField,
  type BudgetState,
  type GatewayContext,
  type RequestCostService,
} from '../../api';
import type { Applied } from './active-budgets';
import type { BudgetPrice } from './unpriced';
import { askedOutput, worstCase, type ReferencedInput } from './worst-case';

/** The response header that says the budget lowered the request's output-token limit, with the limit sent. */
export const BUDGET_CLAMPED_HEADER = 'x-gateway-budget-clamped';
/** The tag stored with the request's record when it was clamped (gateway.* tags are the gateway's own). */
export const BUDGET_CLAMPED_TAG = 'gateway.budget_clamped';
/** min_output_tokens when a clamp budget names none: below it an answer is rarely worth sending. */
export const DEFAULT_MIN_OUTPUT = 256;

/**
 * The fewest output tokens a clamp may leave: the largest min_output_tokens of the budgets the reservation does
 * not fit, or undefined when one of those does not clamp (it refuses).
 */
export function clampFloor(applied: readonly Applied[], states: readonly BudgetState[], amountPico: bigint) {
  let floor: number | undefined;
  for (let i = 0; i < applied.length; i++) {
    const s = states[i];
    if (s.spentPico + s.reservedPico + amountPico <= s.limitPico) continue;
    const min = applied[i].clampMin;
    if (min === undefined) return undefined;
    floor = Math.max(floor ?? 0, min);
  }
  return floor;
}

/** What the tightest of the budgets has left for this request: limit - spent - reserved by others. */
export function remainingPico(states: readonly BudgetState[]): bigint {
  let left: bigint | undefined;
  for (const s of states) {
    const l = s.limitPico - s.spentPico - s.reservedPico;
    if (left === undefined || l < left) left = l;
  }
  return left ?? 0n;
}

/**
 * The largest output-token limit per answer, from `floor` up to one below what the request asks for, whose worst
 * case fits in `leftPico`; undefined when even `floor` does not (the input alone is past what is left), or the
 * request has no output limit to lower.
 */
export function affordableOutput(
  ctx: GatewayContext,
  cost: RequestCostService,
  priced: BudgetPrice,
  referenced: ReferencedInput,
  leftPico: bigint,
  floor: number,
): number | undefined {
  const endpoint = ctx.endpoint?.key;
  if (!endpoint || !OUTPUT_TOKEN_FIELDS[endpoint] || !ctx.json || Number.isNaN(requestedOutputTokens(ctx)))
    return undefined;
  const fits = (tokens: number) => {
    const worst = worstCase(ctx, cost, priced, referenced, tokens);
    return 'pico' in worst && worst.pico <= leftPico;
  };
  let lo = floor;
  let hi = askedOutput(ctx, priced) - 1;
  if (hi < lo || !fits(lo)) return undefined;
  // The cost grows with the output tokens: the largest that fits, by bisection.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Writes the clamp into the request: every output-token field it names is set to `tokens` (all of them lower than
 * before), or, naming none, the provider's own output-limit field is added. The header and the tag say so.
 */
export function clampOutput(ctx: GatewayContext, tokens: number): void {
  const json = ctx.json!;
  const named = OUTPUT_TOKEN_FIELDS[ctx.endpoint!.key]!.filter((f) => tokenCount(json[f]) !== undefined);
  if (named.length === 0) {
    const field = outputLimitField(ctx.provider, ctx.endpoint!.key)!;
    ctx.body = withJsonField(ctx.body!, json, field, tokens);
    json[field] = tokens;
  } else {
    for (const f of named) json[f] = tokens;
    ctx.body = Buffer.from(JSON.stringify(json), 'utf8');
  }
  ctx.bodySize = ctx.body.length;
  ctx.responseHeaders[BUDGET_CLAMPED_HEADER] = String(tokens);
  ctx.tags[BUDGET_CLAMPED_TAG] = String(tokens);
}
