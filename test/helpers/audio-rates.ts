import { PriceCatalog } from '../../pricing/catalog';

/**
 * gpt-4o-audio-preview at the rates of LiteLLM's price file (text $2.5 / $10, audio $40 / $80 per 1M tokens): the
 * bundled catalog has no entry for it, so tests of audio-token pricing bring their own.
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
