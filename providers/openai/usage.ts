import { chatEndpoint, embeddingsEndpoint } from '../wire/chat-completions';
import { responsesEndpoint } from '../wire/responses';
import { imagesEndpoint, speechEndpoint, transcriptionEndpoint } from '../wire/media';
import { byEndpoint } from '../wire/sse-usage';

/**
 * OpenAI's UsageParser, reused by OpenAI-compatible providers (gemini, mistral, deepseek, xai, groq ...).
 * Audio and image answers report the units they are billed by (providers/wire/media.ts).
 */
export const openaiUsageParser = byEndpoint({
  'chat.completions': chatEndpoint(),
  responses: responsesEndpoint(),
  embeddings: embeddingsEndpoint(),
  'audio.speech': speechEndpoint,
  'audio.transcriptions': transcriptionEndpoint,
  'audio.translations': transcriptionEndpoint,
  'images.generations': imagesEndpoint,
  'images.edits': imagesEndpoint,
  'images.variations': imagesEndpoint,
});
