import type { Usage } from '../../core/usage';
import { chatEndpoint, chatUsage, embeddingsEndpoint, embeddingsUsage } from '../wire/chat-completions';
import { responsesEndpoint, responsesUsage } from '../wire/responses';
import { addDecimal } from '../../pricing/decimal';
import { at, compact, costString, str, type JsonObject, type UsageReader } from '../wire/read';
import { byEndpoint } from '../wire/sse-usage';

/**
 * What the request cost in USD. usage.cost is what OpenRouter billed; with BYOK (is_byok: true, the
 * provider's key is the client's own) it is only OpenRouter's fee, and the provider bills its part to the
 * client's account: cost_details.upstream_inference_cost. The request cost both, added exactly. A BYOK usage
 * without the upstream part reports no cost, so the catalog price (or "unpriced") applies instead of a fee
 * passing for the whole cost. Without BYOK upstream_inference_cost is already inside usage.cost.
 */
function openrouterCost(u: JsonObject): string | undefined {
  const cost = costString(u['cost']);
  if (u['is_byok'] !== true) return cost;
  const upstream = costString(at(u, 'cost_details', 'upstream_inference_cost'));
  return cost === undefined || upstream === undefined ? undefined : addDecimal(cost, upstream);
}

/**
 * OpenRouter's additions to an OpenAI-shaped usage: the cost it reports (see openrouterCost), the model that
 * actually served (top-level `model` of the body, chunk or response object) and the generation id (its `id`). cache_write_tokens is
 * already read by the OpenAI chat reader.
 */
function withOpenRouterFields(read: UsageReader): UsageReader {
  return (u: JsonObject, root: JsonObject): Usage =>
    compact({
      ...read(u, root),
      providerCostUsd: openrouterCost(u),
      servedModel: str(root, 'model'),
      generationId: str(root, 'id'),
    });
}

export const openrouterChatUsage = withOpenRouterFields(chatUsage);
export const openrouterResponsesUsage = withOpenRouterFields(responsesUsage);
export const openrouterEmbeddingsUsage = withOpenRouterFields(embeddingsUsage);

export const openrouterUsageParser = byEndpoint({
  'chat.completions': chatEndpoint(openrouterChatUsage),
  responses: responsesEndpoint(openrouterResponsesUsage),
  embeddings: embeddingsEndpoint(openrouterEmbeddingsUsage),
});
