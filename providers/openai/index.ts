import { bearer, defineProvider } from '../../core/provider-contract';
import { openaiUsageParser } from './usage';

/** OpenAI: the chat-completions family and every endpoint the gateway proxies. */
export const openai = defineProvider({
  slug: 'openai',
  displayName: 'OpenAI',
  family: 'chat-completions',
  baseUrl: 'https://api.openai.com/v1',
  modelPrefixes: [
    'gpt-',
    'chatgpt-',
    'o1',
    'o3',
    'o4-',
    'codex-',
    'text-embedding-',
    'whisper-',
    'tts-',
    'dall-e-',
    'gpt-image-',
    'chatgpt-image-',
    'omni-moderation-',
    'text-moderation-',
    'davinci-',
    'babbage-',
    'ft:',
  ],
  auth: bearer(),
  endpoints: [
    'chat.completions',
    'responses',
    'embeddings',
    'audio.speech',
    'audio.transcriptions',
    'audio.translations',
    'images.generations',
    'images.edits',
    'images.variations',
    'models',
    'files',
    'batches',
  ],
  // Files and batches name no model: their paths route here.
  ownsEndpoints: ['files', 'batches'],
  // Its reasoning models refuse max_tokens on chat completions; max_completion_tokens works for every model.
  outputLimitFields: { 'chat.completions': 'max_completion_tokens', responses: 'max_output_tokens' },
  usage: openaiUsageParser,
});
