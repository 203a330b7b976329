import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { waitForRecord } from '../framework/helpers';
import { fixtureBytes } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { sseChunks, TestUpstream } from '../helpers/upstream';

/**
 * Answers that name the service tier that served them, and audio chats, through the official SDK and the gateway:
 * the record keeps the tier and the audio tokens, and the cost is that tier's and the audio rates' (BUILT fixtures,
 * see test/fixtures/SOURCES.md).
 */
describe('served tier and audio tokens, recorded', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  // gpt-4o-audio-preview's text and audio rates, given as an override a deployment would write (the bundled ones agree).
  useGateway(
    upstream,
    (g) => (gw = g),
    `pricing:
  models:
    - { provider: openai, model: gpt-4o-audio-preview, input: "2.5", output: "10", input_audio: "40", output_audio: "80" }
`,
  );
  const openai = () =>
    new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });

  it('o3 answered at flex is recorded with its tier and the flex cost, $0.004032', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/chat_completion_flex_built.json'),
    }));
    const { data, response } = await openai()
      .chat.completions.create({ model: 'o3', service_tier: 'flex', messages: [{ role: 'user', content: 'Count.' }] })
      .withResponse();
    expect(data.service_tier).to.equal('flex');
    expect(response.headers.get('x-gateway-cost')).to.equal('0.004032');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    expect(r).to.include({
      service_tier: 'flex',
      cost_pico: '4032000000',
      provenance: 'measured',
      price_id: 'openai/o3',
    });
  });

  it('a gpt-5 Responses stream answered at priority: $0.011392, the tier from response.completed', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'text/event-stream' },
      body: sseChunks(fixtureBytes('openai/responses_stream_priority_built.sse')),
    }));
    const { data: stream, response } = await openai()
      .responses.create({ model: 'gpt-5', input: 'ping', stream: true })
      .withResponse();
    let tier: string | null | undefined;
    for await (const event of stream) if (event.type === 'response.completed') tier = event.response.service_tier;
    expect(tier).to.equal('priority');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    expect(r).to.include({ service_tier: 'priority', cost_pico: '11392000000', provenance: 'measured' });
  });

  it('an Anthropic stream answered at Priority Tier is recorded with its tier and no cost, never the standard one', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'text/event-stream' },
      body: sseChunks(fixtureBytes('anthropic/messages_stream_priority_built.sse')),
    }));
    const anthropic = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });
    const { data: stream, response } = await anthropic.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    let tier: string | null | undefined;
    for await (const event of stream) if (event.type === 'message_start') tier = event.message.usage.service_tier;
    expect(tier).to.equal('priority');
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    // Anthropic prices Priority Tier by commitment, not per token: the bundled catalog has no rate for it.
    expect(r).to.include({ service_tier: 'priority', input_tokens: 17, output_tokens: 10, provenance: 'unpriced' });
    expect(r.cost_pico).to.equal(null);
  });

  it('an audio chat stream keeps its audio tokens apart and prices them at the audio rates, $0.01063', async () => {
    upstream.respondWith(() => ({
      headers: { 'content-type': 'text/event-stream' },
      body: sseChunks(fixtureBytes('openai/chat_stream_audio_built.sse')),
    }));
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: 'gpt-4o-audio-preview',
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'pcm16' },
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Are golden retrievers good family dogs?' }],
      })
      .withResponse();
    for await (const chunk of stream) void chunk;
    const r = await waitForRecord(gw, response.headers.get('x-gateway-request-id'));
    // 120 input tokens of which 100 audio, 98 output of which 80 audio: 20 x $2.5 + 100 x $40 + 18 x $10 + 80 x $80.
    expect(r).to.include({
      input_tokens: 120,
      input_audio_tokens: 100,
      output_tokens: 98,
      output_audio_tokens: 80,
      service_tier: 'default',
      cost_pico: '10630000000',
      provenance: 'measured',
    });
  });
});
