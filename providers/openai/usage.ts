import type { UsageParser } from '../../core/usage';
import { chatEndpoint, embeddingsEndpoint } from '../wire/chat-completions';
import { responsesEndpoint } from '../wire/responses';
import { imagesEndpoint, speechEndpoint, transcriptionEndpoint } from '../wire/media';
import { openaiBatches } from '../wire/batches';
import { byEndpoint } from '../wire/sse-usage';

/** Audio and image answers report the units they are billed by (providers/wire/media.ts). */
const endpoints = byEndpoint({
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

/**
 * OpenAI's UsageParser, reused by OpenAI-compatible providers (gemini, mistral, deepseek, xai, groq ...), with its
 * batch output files read line by line (providers/wire/batches.ts).
 */
export const openaiUsageParser: UsageParser = { ...endpoints, batches: openaiBatches(endpoints) };
