import { chatEndpoint, chatUsage } from '../wire/chat-completions';
import { responsesEndpoint, responsesUsage } from '../wire/responses';
import { compact, costString, num, str, type UsageReader } from '../wire/read';
import { byEndpoint } from '../wire/sse-usage';
import { providerCostStep } from '../../pricing/cost-rounding';

/**
 * Perplexity chat usage: the OpenAI shape plus search billing fields. Streams repeat a cumulative usage
 * object in every chunk, which the shared ChatStream handles by keeping the last one.
 */
export const perplexityChatUsage: UsageReader = (u, root) => {
  const base = chatUsage(u, root);
  const completion = num(u, 'completion_tokens');
  // Deep research reports reasoning_tokens OUTSIDE completion_tokens (Perplexity prices them on their own, at
  // $3/1M vs $8/1M output; no recorded response confirms the shape). Usage.outputTokens includes reasoning by
  // contract, so they are added; the split stays in reasoningTokens for a rule that bills them at their rate.
  const reasoning = num(u, 'reasoning_tokens');
  return compact({
    ...base,
    outputTokens: reasoning !== undefined && completion !== undefined ? completion + reasoning : base.outputTokens,
    reasoningTokens: reasoning ?? base.reasoningTokens,
    citationTokens: num(u, 'citation_tokens'),
    searchQueries: num(u, 'num_search_queries') ?? num(u, 'search_queries'),
    searchContextSize: str(u, 'search_context_size'),
    // usage.cost is an object ({..., total_cost}) in Perplexity responses; a bare number is accepted too.
    providerCostUsd: costString(u['cost']),
    providerCostStepUsd: u['cost'] === undefined ? undefined : PERPLEXITY_COST_STEP,
  });
};

/** The step Perplexity rounds usage.cost to (pricing/cost-rounding.ts). */
const PERPLEXITY_COST_STEP = providerCostStep('perplexity');

/** The Agent API (Responses shape) may also report its cost in usage.cost. */
const perplexityResponsesUsage: UsageReader = (u, root) =>
  compact({
    ...responsesUsage(u, root),
    providerCostUsd: costString(u['cost']),
    providerCostStepUsd: u['cost'] === undefined ? undefined : PERPLEXITY_COST_STEP,
  });

export const perplexityUsageParser = byEndpoint({
  'chat.completions': chatEndpoint(perplexityChatUsage),
  responses: responsesEndpoint(perplexityResponsesUsage),
});
