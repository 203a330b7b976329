import { apiKeyHeader, defineProvider } from 'tollgate';
import { acmeUsageParser } from './usage';

/**
 * Acme AI, a provider written in code: an OpenAI-compatible API that takes its key in an X-Acme-Key header
 * and reports usage in its own shape (see usage.ts). Deployed from gateway.config.yaml with
 *   providers: { acme: { use: ./dist/examples/providers/acme } }
 * where base_url, prefixes, endpoints and timeouts may be overridden like any provider's.
 */
export default defineProvider({
  apiVersion: '1',
  slug: 'acme',
  displayName: 'Acme AI',
  family: 'chat-completions',
  baseUrl: 'https://api.acme.example/v1',
  modelPrefixes: ['acme-'],
  auth: apiKeyHeader('x-acme-key'),
  endpoints: ['chat.completions', 'embeddings', 'models'],
  usage: acmeUsageParser,
});
