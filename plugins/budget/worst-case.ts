import { parseUsd, requestedOutputTokens, type GatewayContext, type RequestCostService, type Usage } from '../../api';
import { mediaWorstCase } from './media-worst-case';
import { referencesContext } from './referenced-context';
import type { BudgetPrice } from './unpriced';
import { bounded, unbounded, type WorstCase } from './worst-case-bound';

/** Output tokens assumed per answer when the request names no maximum and the catalog knows none for the model. */
export const DEFAULT_MAX_OUTPUT = 4096;
/** Input is estimated from the body size without a tokenizer (cheap on the request path): ~3 bytes a token. */
const BYTES_PER_TOKEN = 3;
/** Input tokens reserved for referenced context when the catalog gives the model no context window. */
export const DEFAULT_REFERENCED_INPUT = 128_000;

/** budgets.referenced_input_tokens: a number of tokens, or the model's whole context window. */
export type ReferencedInput = number | 'context_window';

/**
 * What admission reserves for a request, at `priced` (BudgetPricing): the most it can cost, as far as the body tells.
 * - Output: the maximum the request asks for (max-tokens, before this plugin, may have written the workspace's
 *   cap into it), else the model's maximum output from the catalog, else DEFAULT_MAX_OUTPUT; times `n` answers on
 *   chat completions. Embeddings produce no output tokens.
 * - A request fee by search context size: the costliest size's.
 * - Input: body bytes / 3. A request that references context the body does not hold (referenced-context.ts)
 *   reserves at least `referenced` input tokens. Never more than the model's context window.
 * Priced like the request itself (RequestCostService.price), so a reservation past a long-context threshold is
 * priced at that tier, and at the costliest service tier the request's `service_tier` allows. Audio and images are reserved by the unit their model is billed by (media-worst-case.ts).
 * Unbounded when the price cannot price it (a rate the entry lacks, counts past what can be summed exactly).
 * `outputLimit`, when given, stands for the output tokens per answer the body asks for (a clamp being weighed).
 */
export function worstCase(
  ctx: GatewayContext,
  cost: RequestCostService,
  priced: BudgetPrice,
  referenced: ReferencedInput,
  outputLimit?: number,
): WorstCase {
  if (!ctx.endpoint?.costCounted) return mediaWorstCase(ctx, cost, priced);
  const { price } = priced;
  const window = price.context_window;
  let inputTokens = Math.ceil(ctx.bodySize / BYTES_PER_TOKEN);
  if (ctx.json && referencesContext(ctx.json)) {
    inputTokens = Math.max(
      inputTokens,
      referenced === 'context_window' ? (window ?? DEFAULT_REFERENCED_INPUT) : referenced,
    );
  }
  if (window !== undefined) inputTokens = Math.min(inputTokens, window);
  const perAnswer = outputLimit ?? askedOutput(ctx, priced);
  const n = ctx.endpoint.key === 'chat.completions' ? ctx.json?.n : undefined;
  const answers = Number.isSafeInteger(n) && (n as number) > 1 ? (n as number) : 1;
  const outputTokens = ctx.endpoint.key === 'embeddings' ? 0 : perAnswer * answers;
  const usage: Usage = { inputTokens, outputTokens };
  // A request fee by search context size (Perplexity): the costliest, whatever size the answer reports.
  const fee = price.request_fee;
  if (fee && typeof fee === 'object') {
    usage.searchContextSize = Object.entries(fee).reduce((a, b) => (parseUsd(b[1]!) > parseUsd(a[1]!) ? b : a))[0];
  }
  const worst = atHighestTier(ctx, cost, usage, priced);
  if (worst.costPico !== null) return bounded(worst.costPico);
  return unbounded(worst.reason ?? 'no price for its tokens', Number.isSafeInteger(outputTokens) ? null : 'n');
}

/**
 * The tiers a request may be served at, by its `service_tier`: what it asks for or the standard tier (a tier without
 * capacity falls back to it); `auto` and `priority` may be served at priority. Absent: the standard tier alone.
 */
function allowedTiers(asked: unknown): readonly (string | undefined)[] {
  const tier = typeof asked === 'string' ? asked.trim().toLowerCase() : undefined;
  if (tier === 'auto' || tier === 'priority') return PRIORITY_OR_STANDARD;
  return tier && tier !== 'default' && tier !== 'standard' && tier !== 'standard_only'
    ? [tier, undefined]
    : STANDARD_ONLY;
}

const STANDARD_ONLY = [undefined] as const;
const PRIORITY_OR_STANDARD = ['priority', undefined] as const;

/**
 * The worst case at the costliest tier the request allows that the price lists (a tier it does not price is left
 * out: its answer would be recorded unpriced, and settled at what was reserved). Settlement is at the served tier.
 */
function atHighestTier(
  ctx: GatewayContext,
  cost: RequestCostService,
  usage: Usage,
  priced: BudgetPrice,
): ReturnType<RequestCostService['price']> {
  const tiers = allowedTiers(ctx.json?.service_tier);
  if (tiers === STANDARD_ONLY) return cost.price(ctx, usage, priced.standIn); // most requests: one price, no arrays
  const each = tiers.map((serviceTier) =>
    cost.price(ctx, serviceTier ? { ...usage, serviceTier } : usage, priced.standIn),
  );
  const known = each.filter((p) => p.costPico !== null);
  return known.reduce((a, b) => (b.costPico! > a.costPico! ? b : a), known[0] ?? each[each.length - 1]);
}

/** The output tokens per answer a request may produce: what it asks for, else the model's maximum from the catalog. */
export function askedOutput(ctx: GatewayContext, priced: BudgetPrice): number {
  const asked = requestedOutputTokens(ctx);
  return asked === undefined || Number.isNaN(asked) ? (priced.price.max_output_tokens ?? DEFAULT_MAX_OUTPUT) : asked;
}
