import { expect } from 'chai';
import { referencesContext } from '../../plugins/budget/referenced-context';

describe('referencesContext: input the body only points to', () => {
  const refs: [string, Record<string, unknown>][] = [
    ['previous_response_id', { model: 'gpt-5.4', input: 'and then?', previous_response_id: 'resp_1' }],
    ['a conversation', { model: 'gpt-5.4', input: 'hi', conversation: 'conv_1' }],
    ['a stored prompt', { model: 'gpt-5.4', prompt: { id: 'pmpt_1', version: '2' } }],
    [
      'a Responses input_file by id',
      { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] },
    ],
    [
      'a Responses input_file by URL',
      { input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://x/a.pdf' }] }] },
    ],
    [
      'a Responses input_image by URL',
      { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/a.png' }] }] },
    ],
    ['a chat file part', { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }],
    [
      'a chat image by URL',
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/a.png' } }] }] },
    ],
    [
      'an Anthropic document by file id',
      { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }] },
    ],
    [
      'an Anthropic image by URL',
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/a.png' } }] }] },
    ],
    ['file_search', { input: 'hi', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }],
    ['web search', { input: 'hi', tools: [{ type: 'web_search_preview' }] }],
  ];
  for (const [what, body] of refs) it(`${what}: yes`, () => expect(referencesContext(body)).to.equal(true));

  const inline: [string, Record<string, unknown>][] = [
    ['plain chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'the file_id is file-1' }] }],
    [
      'an inline image (data: URL)',
      {
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        ],
      },
    ],
    [
      'an Anthropic base64 image',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
          },
        ],
      },
    ],
    ['a function tool', { input: 'hi', tools: [{ type: 'function', name: 'f' }] }],
    ['hostile nesting', { messages: JSON.parse('['.repeat(5000) + ']'.repeat(5000)) }],
  ];
  for (const [what, body] of inline) it(`${what}: no`, () => expect(referencesContext(body)).to.equal(false));
});
