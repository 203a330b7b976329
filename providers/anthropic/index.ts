import { apiKeyHeader, defineProvider } from '../../core/provider-contract';
import { anthropicUsageParser } from '../wire/messages';

/** Anthropic: the messages-style provider. /v1/messages always routes here, whatever the model. */
export const anthropic = defineProvider({
  slug: 'anthropic',
  displayName: 'Anthropic',
  family: 'messages',
  baseUrl: 'https://api.anthropic.com/v1',
  modelPrefixes: ['claude-'],
  // Anthropic's API takes x-api-key; its SDKs since 1.x send the same key as Authorization: Bearer.
  auth: apiKeyHeader('x-api-key', 'authorization'),
  endpoints: ['messages', 'models', 'messages.batches'],
  ownsEndpoints: ['messages', 'messages.batches'],
  outputLimitFields: { messages: 'max_tokens' },
  usage: anthropicUsageParser,
});
