import { apiKeyHeader, defineProvider } from 'tollgate';
import { acmeUsageParser } from './usage';

/**
 * Acme AI, a provider written in code: an OpenAI-compatible API that takes its key in an X-Acme-Key header
 * and reports usage in its own shape (see usage.ts). Deployed from gateway.config.yaml with
 *   providers: { acme: { use: ./dist/examples/providers/acme } }
 * where base_url, prefixes, endpoints and timeouts may be overridden like any provider's. Its models' prices ship
 * with it; a deployment's pricing.models entries replace them.
 */
export default defineProvider({
  apiVersion: '2',
  slug: 'acme',
  displayName: 'Acme AI',
  family: 'chat-completions',
  baseUrl: 'https://api.acme.example/v1',
  modelPrefixes: ['acme-'],
  auth: apiKeyHeader('x-acme-key'),
  endpoints: ['chat.completions', 'embeddings', 'models'],
  usage: acmeUsageParser,
  // USD per 1M tokens, as in gateway.config.yaml's pricing.models (without `provider`: the deployed slug is used).
  prices: [
    {
      model: 'acme-large',
      input: '2',
      output: '6',
      cache_read: '0.5',
      context_window: 128000,
      max_output_tokens: 8192,
    },
    { model: 'acme-embed', input: '0.02', kind: 'embedding' },
  ],
});
