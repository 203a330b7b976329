import { bearer, defineProvider } from '../../core/provider-contract';
import { perplexityUsageParser } from './usage';

/**
 * Perplexity: the search-engine provider. Its Sonar chat-completions endpoint lives at the host root
 * (https://api.perplexity.ai/chat/completions), its Responses-compatible Agent API under /v1.
 */
export const perplexity = defineProvider({
  slug: 'perplexity',
  displayName: 'Perplexity',
  family: 'search',
  baseUrl: 'https://api.perplexity.ai',
  modelPrefixes: ['sonar', 'pplx-'],
  auth: bearer(),
  endpoints: ['chat.completions', 'responses'],
  paths: { responses: '/v1/responses' },
  outputLimitFields: { 'chat.completions': 'max_tokens', responses: 'max_output_tokens' },
  usage: perplexityUsageParser,
});
