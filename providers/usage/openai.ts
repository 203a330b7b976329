import { chatEndpoint, embeddingsEndpoint } from './openai-chat';
import { responsesEndpoint } from './openai-responses';
import { byEndpoint } from './stream';

/**
 * OpenAI's UsageParser, reused by OpenAI-compatible providers (gemini, mistral, deepseek, xai, groq ...).
 * Audio and image endpoints are not counted toward cost, so they report no usage here.
 */
export const openaiUsageParser = byEndpoint({
  'chat.completions': chatEndpoint(),
  responses: responsesEndpoint(),
  embeddings: embeddingsEndpoint(),
});
