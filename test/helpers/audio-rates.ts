import { PriceCatalog } from '../../pricing/catalog';

/**
 * gpt-4o-audio-preview at OpenAI's rates (text $2.5 / $10, audio $40 / $80 per 1M tokens) as an override alone, so
 * that tests of audio-token pricing do not depend on the bundled catalog.
 */
export const audioPreviewRates = (): PriceCatalog =>
  PriceCatalog.fromConfig({
    models: [
      {
        provider: 'openai',
        model: 'gpt-4o-audio-preview',
        input: '2.5',
        output: '10',
        input_audio: '40',
        output_audio: '80',
      },
    ],
  });
