import { bearer, defineProvider } from '../../core/provider-contract';
import { openrouterUsageParser } from './usage';

/**
 * OpenRouter: the aggregator. It has no model prefixes of its own (its ids look like vendor/model), so it is
 * reached with X-Gateway-Provider: openrouter; records are attributed to the model that actually served.
 */
export const openrouter = defineProvider({
  slug: 'openrouter',
  displayName: 'OpenRouter',
  family: 'aggregator',
  baseUrl: 'https://openrouter.ai/api/v1',
  modelPrefixes: [],
  auth: bearer(),
  endpoints: ['chat.completions', 'responses', 'embeddings', 'models'],
  outputLimitFields: { 'chat.completions': 'max_tokens', responses: 'max_output_tokens' },
  usage: openrouterUsageParser,
});
