import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import bundled from '../../pricing/catalog.json';
import { waitForRecord } from '../framework/helpers';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, type TestGateway, useGateway, openaiClient } from '../helpers/gateway';
import { sseChunks, TestUpstream } from '../helpers/upstream';

/** The bundled catalog entry of a family, as committed (the prices the costs below are worked out from). */
function entry(provider: string, model: string): { input: string; output: string; cache_write?: string } {
  const found = (bundled.models as { provider: string; model: string }[]).find(
    (m) => m.provider === provider && m.model === model,
  );
  if (!found) throw new Error(`${provider}/${model} is not in pricing/catalog.json`);
  return found as never;
}

/** USD per 1M tokens x tokens, in pico-USD (1e-12): rate x tokens x 1e6, by string arithmetic on the decimal rate. */
function pico(ratePer1m: string, tokens: number): bigint {
  const [whole, frac = ''] = ratePer1m.split('.');
  return (BigInt(whole + frac) * BigInt(tokens) * 1_000_000n) / 10n ** BigInt(frac.length);
}

/**
 * Dated snapshots the catalog has no entry of their own for, asked through the official SDKs and answered with
 * the recorded provider payloads: each is priced at its family's entry, and the record names that entry.
 */
describe('dated snapshots priced at their family', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(
    upstream,
    (g) => (gw = g),
    (url) => `
providers:
  gemini: { type: openai-compatible, base_url: "${url}/gemini/v1beta/openai", prefixes: [gemini-] }
`,
  );
  const openai = () => openaiClient(gw);

  it('claude-3-5-sonnet-20240620 (Anthropic, -YYYYMMDD) at anthropic/claude-3-5-sonnet', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('anthropic/messages_cache_creation.json'),
    }));
    const client = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });
    const { data, response } = await client.messages
      .create({
        model: 'claude-3-5-sonnet-20240620',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'Summarise the three articles.' }],
      })
      .withResponse();
    expect(data.model).to.equal('claude-3-5-sonnet-20240620');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    // The recorded answer: 4 input tokens, 1,163 written to the 5-minute cache, 187 output tokens.
    const p = entry('anthropic', 'claude-3-5-sonnet');
    const cost = pico(p.input, 4) + pico(p.cache_write!, 1163) + pico(p.output, 187);
    expect(cost).to.equal(7_178_250_000n); // 4 x $3 + 1,163 x $3.75 + 187 x $15 per million = $0.00717825
    expect(r).to.include({
      model: 'claude-3-5-sonnet-20240620',
      price_id: 'anthropic/claude-3-5-sonnet',
      provenance: 'measured',
      cost_pico: String(cost),
    });
    expect(response.headers.get('x-gateway-cost')).to.equal('0.00717825');
  });

  it('gpt-4-0613 (OpenAI, -MMDD) at openai/gpt-4', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'text/event-stream' },
      body: sseChunks(fixtureBytes('openai/chat_stream_without_usage.sse')),
    }));
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: 'gpt-4-0613',
        messages: [{ role: 'user', content: 'Say this is a test' }],
        stream: true,
      })
      .withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).to.equal('This is a test.');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    // The recorded stream reports no usage: the counts are the tokenizer's, 12 prompt tokens for this request
    // with the chat framing and one per streamed content event ("This", " is", " a", " test", ".").
    expect(r).to.include({ input_tokens: 12, output_tokens: 5, usage_source: 'tokenizer' });
    const p = entry('openai', 'gpt-4');
    const cost = pico(p.input, 12) + pico(p.output, 5);
    expect(cost).to.equal(660_000_000n); // 12 x $30 + 5 x $60 per million = $0.00066
    expect(r).to.include({
      model: 'gpt-4-0613',
      price_id: 'openai/gpt-4',
      provenance: 'estimated',
      cost_pico: String(cost),
    });
  });

  it('gemini-2.5-pro-preview-05-06 (Gemini, -preview-MM-DD) at gemini/gemini-2.5-pro', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('gemini/openai_compat_chat_completion.json'),
    }));
    const { data, response } = await openai()
      .chat.completions.create({
        model: 'gemini-2.5-pro-preview-05-06',
        messages: [{ role: 'user', content: 'What time is it?' }],
      })
      .withResponse();
    expect(data.model).to.equal('gemini-2.5-pro-preview-05-06');
    expect(upstream.received[0].mount).to.equal('gemini');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    // The recorded answer: prompt_tokens 66, completion_tokens 6, total_tokens 100: the 28 thinking tokens
    // Gemini leaves out of completion_tokens are billed as output, 34 in all.
    expect(r).to.include({ input_tokens: 66, output_tokens: 34 });
    const p = entry('gemini', 'gemini-2.5-pro');
    const cost = pico(p.input, 66) + pico(p.output, 34);
    expect(cost).to.equal(422_500_000n); // 66 x $1.25 + 34 x $10 per million = $0.0004225
    expect(r).to.include({
      model: 'gemini-2.5-pro-preview-05-06',
      price_id: 'gemini/gemini-2.5-pro',
      provenance: 'measured',
      cost_pico: String(cost),
    });
    expect(response.headers.get('x-gateway-cost')).to.equal('0.0004225');
  });
});
