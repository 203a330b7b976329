import { chatEndpoint, embeddingsEndpoint } from '../wire/chat-completions';
import { responsesEndpoint } from '../wire/responses';
import { byEndpoint } from '../wire/sse-usage';

/**
 * OpenAI's UsageParser, reused by OpenAI-compatible providers (gemini, mistral, deepseek, xai, groq ...).
 * Audio and image endpoints are not counted toward cost, so they report no usage here.
 */
export const openaiUsageParser = byEndpoint({
  'chat.completions': chatEndpoint(),
  responses: responsesEndpoint(),
  embeddings: embeddingsEndpoint(),
});
