import { apiKeyHeader, bearer, noAuth, type AuthScheme, type ProviderModule } from '../../core/provider-contract';
import type { ProviderEntry } from '../../config/schema';
import { USAGE_PARSERS } from '../../providers/registry';

/** Builds a provider declared in YAML alone (gemini, mistral, deepseek, xai, groq, vLLM, Ollama ...). */
export function openaiCompatible(slug: string, entry: ProviderEntry): ProviderModule {
  if (!entry.base_url) throw new Error(`providers.${slug}.base_url is required for a provider declared in YAML`);
  return {
    slug,
    displayName: entry.display_name ?? slug,
    family: 'chat-completions',
    baseUrl: entry.base_url,
    modelPrefixes: entry.prefixes ?? [],
    auth: entry.auth ? authFromConfig(entry.auth) : bearer(),
    endpoints: entry.endpoints ?? ['chat.completions', 'embeddings', 'models'],
    outputLimitFields: { 'chat.completions': entry.output_limit_field ?? 'max_tokens' },
    usage: USAGE_PARSERS[entry.usage ?? 'openai'],
  };
}

export function authFromConfig(auth: NonNullable<ProviderEntry['auth']>): AuthScheme {
  if (typeof auth === 'object') return apiKeyHeader(auth.header);
  if (auth === 'x-api-key') return apiKeyHeader('x-api-key');
  return auth === 'none' ? noAuth() : bearer();
}
