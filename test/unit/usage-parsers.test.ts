import { expect } from 'chai';
import { SseDecoder } from '../../core/sse';
import type { EndpointKey, SseEvent, StreamUsageAccumulator, UsageParser } from '../../core/usage';
import { USAGE_PARSERS } from '../../providers/registry';
import { decimalString } from '../../providers/wire/read';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';

const { openai, anthropic, perplexity, openrouter } = USAGE_PARSERS as Record<
  'openai' | 'anthropic' | 'perplexity' | 'openrouter',
  UsageParser
>;

function sseEvents(raw: Buffer | string): SseEvent[] {
  const d = new SseDecoder();
  return [...d.push(raw), ...d.end()];
}

function stream(parser: UsageParser, endpoint: EndpointKey, events: SseEvent[]): StreamUsageAccumulator {
  const acc = parser.createStreamAccumulator(endpoint);
  for (const e of events) acc.push(e);
  return acc;
}

const streamFixture = (parser: UsageParser, endpoint: EndpointKey, file: string) =>
  stream(parser, endpoint, sseEvents(fixtureBytes(file)));

/** perplexity/sonar_stream.chunks.jsonl holds only the data payloads (SOURCES.md): frame each as `data: ...\n\n`. */
function perplexityStreamAsSse(): string {
  return fixtureBytes('perplexity/sonar_stream.chunks.jsonl')
    .toString('utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => `data: ${line}\n\n`)
    .join('');
}

/** groq/chat_stream_trimmed.chunks.jsonl (data payloads only, SOURCES.md) framed as SSE; `edit` may change a chunk. */
function groqStreamAsSse(edit: (chunk: any) => any = (c) => c): string {
  return fixtureBytes('groq/chat_stream_trimmed.chunks.jsonl')
    .toString('utf8')
    .split('\n')
    .map((line) => `data: ${JSON.stringify(edit(JSON.parse(line)))}\n\n`)
    .join('');
}

/** A decimal string as an exact scaled integer (value x 10^scale), for independent money arithmetic. */
function scaled(text: string, scale: number): bigint {
  const [whole, frac = ''] = text.split('.');
  return BigInt(whole + frac.padEnd(scale, '0'));
}

describe('usage parsers', () => {
  it('exports the four built-in parsers by name', () => {
    expect(Object.keys(USAGE_PARSERS).sort()).to.deep.equal(['anthropic', 'openai', 'openrouter', 'perplexity']);
  });

  describe('openai: chat completions JSON', () => {
    it('subtracts cached reads from prompt_tokens (chat_completion_cached_tokens.json)', () => {
      // usage: prompt_tokens 1149, prompt_tokens_details.cached_tokens 1024, completion_tokens 353, reasoning_tokens 0.
      // inputTokens = 1149 - 1024 = 125.
      const u = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_cached_tokens.json'));
      expect(u).to.deep.equal({
        inputTokens: 125,
        outputTokens: 353,
        cacheReadTokens: 1024,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
    });

    it('keeps reasoning inside output (chat_completion_reasoning_tokens.json)', () => {
      // usage: prompt 11, cached 0, completion 228 (of which reasoning_tokens 192), total 239 = 11 + 228.
      const u = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_reasoning_tokens.json'));
      expect(u).to.deep.equal({
        inputTokens: 11,
        outputTokens: 228,
        cacheReadTokens: 0,
        reasoningTokens: 192,
        serviceTier: 'default',
      });
    });

    it('subtracts cache writes from prompt_tokens (chat_completion_cache_write_tokens.json)', () => {
      // usage: prompt 4020, cache_write_tokens 4012, cached_tokens 0, completion 4 -> inputTokens = 4020 - 4012 = 8.
      const u = openai.fromJson('chat.completions', fixtureJson('openai/chat_completion_cache_write_tokens.json'));
      expect(u).to.deep.equal({
        inputTokens: 8,
        outputTokens: 4,
        cacheReadTokens: 0,
        cacheWriteTokens: 4012,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
    });

    it('counts thinking tokens missing from completion_tokens as output (gemini/openai_compat_chat_completion)', () => {
      // usage: prompt 66, completion 6, total 100: the 28 tokens of total not in prompt + completion are thinking
      // tokens (billed as output), so outputTokens = 6 + 28 = 34, and reasoningTokens = 28. No details objects:
      // no cache fields.
      const u = openai.fromJson('chat.completions', fixtureJson('gemini/openai_compat_chat_completion.json'));
      expect(u).to.deep.equal({ inputTokens: 66, outputTokens: 34, reasoningTokens: 28 });
    });

    it('reads DeepSeek prompt_cache_hit_tokens as cache reads', () => {
      const usage = {
        prompt_tokens: 100,
        prompt_cache_hit_tokens: 60,
        prompt_cache_miss_tokens: 40,
        completion_tokens: 5,
        total_tokens: 105,
      };
      const expected = { inputTokens: 40, outputTokens: 5, cacheReadTokens: 60 };
      expect(openai.fromJson('chat.completions', { usage })).to.deep.equal(expected);
    });

    it('returns undefined for bodies without usage (errors, no usage object, null usage, non-objects)', () => {
      for (const file of ['openai/error_404_model_not_found.json', 'openai/error_401_invalid_api_key.json']) {
        expect(openai.fromJson('chat.completions', fixtureJson(file)), file).to.equal(undefined);
      }
      expect(openai.fromJson('chat.completions', { usage: null })).to.equal(undefined);
      expect(openai.fromJson('chat.completions', { usage: { total_tokens: 'x' } })).to.equal(undefined);
      expect(openai.fromJson('chat.completions', 'text')).to.equal(undefined);
      expect(openai.fromJson('chat.completions', null)).to.equal(undefined);
    });

    it('never makes inputTokens negative', () => {
      const body = { usage: { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 12 } } };
      expect(openai.fromJson('chat.completions', body)?.inputTokens).to.equal(0);
    });
  });

  describe('openai: chat completions SSE', () => {
    it('reads the usage-only final chunk and ignores "usage": null (chat_stream_with_usage.sse)', () => {
      // Final chunk: choices [] with prompt_tokens 12, completion_tokens 12, cached_tokens 0, reasoning_tokens 0.
      const acc = streamFixture(openai, 'chat.completions', 'openai/chat_stream_with_usage.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 12,
        outputTokens: 12,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
      expect(acc.text()).to.equal('This is a test. How can I assist you further?');
    });

    it('reads the older usage shape (chat_stream_with_usage_openai-python.sse)', () => {
      // Final chunk: prompt 14, completion 30, completion_tokens_details.reasoning_tokens 0, no prompt_tokens_details.
      const acc = streamFixture(openai, 'chat.completions', 'openai/chat_stream_with_usage_openai-python.sse');
      expect(acc.result()).to.deep.equal({ inputTokens: 14, outputTokens: 30, reasoningTokens: 0 });
      expect(acc.text()).to.equal(
        "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, " +
          'I recommend checking a reliable weather website or a weather app.',
      );
    });

    it('reports no usage but keeps the text when the stream carries none (chat_stream_without_usage.sse)', () => {
      const acc = streamFixture(openai, 'chat.completions', 'openai/chat_stream_without_usage.sse');
      expect(acc.result()).to.equal(undefined);
      expect(acc.text()).to.equal('This is a test.');
    });

    it('collects reasoning, refusal and tool-call arguments as generated text', () => {
      const chunks = [
        { choices: [{ delta: { reasoning_content: 'think ' } }] },
        { choices: [{ delta: { content: 'Hi', refusal: null } }] },
        { choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":' } }] } }] },
        { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] } }] },
        { choices: [{ delta: { refusal: ' no' } }] },
      ];
      const acc = stream(
        openai,
        'chat.completions',
        chunks.map((c) => ({ data: JSON.stringify(c) })),
      );
      expect(acc.text()).to.equal('think Hi{"a":1} no');
      expect(acc.result()).to.equal(undefined);
    });

    it('never throws on malformed or unexpected payloads', () => {
      const events: SseEvent[] = [
        { data: '{"choices":[{"delta":{"content":"a"}}]' }, // truncated JSON
        { data: '{"choices":"nope","usage":"nope"}' },
        { data: '{"choices":[null,1,{"delta":[]}]}' },
        { data: '[DONE]' },
        { data: '' },
        { data: 'null' },
        { data: '{"usage":{"prompt_tokens":"7","completion_tokens":null}}' },
      ];
      const acc = openai.createStreamAccumulator('chat.completions');
      expect(() => events.forEach((e) => acc.push(e))).not.to.throw();
      // A usage object without one usable count is not a measured zero.
      expect(acc.result()).to.equal(undefined);
    });
  });

  describe('groq (OpenAI-compatible, openai parser): x_groq.usage', () => {
    // The recording's last chunk holds the same counts in x_groq.usage and in usage (prompt 45, completion 662).
    const last = fixtureBytes('groq/chat_stream_trimmed.chunks.jsonl')
      .toString('utf8')
      .split('\n')
      .map((l) => JSON.parse(l))
      .at(-1);

    it('reads x_groq.usage when the stream has no top-level usage (no include_usage)', () => {
      const events = sseEvents(groqStreamAsSse(({ usage: _dropped, ...chunk }) => chunk));
      expect(
        events.every((e) => JSON.parse(e.data).usage === undefined),
        'no top-level usage left',
      ).to.equal(true);
      const acc = stream(openai, 'chat.completions', events);
      expect(acc.result()).to.deep.equal({
        inputTokens: last.x_groq.usage.prompt_tokens,
        outputTokens: last.x_groq.usage.completion_tokens,
      });
      expect(acc.text()).to.equal('Introducing');
    });

    it('reads the same counts from the recording as sent (top-level usage too)', () => {
      const acc = stream(openai, 'chat.completions', sseEvents(groqStreamAsSse()));
      expect(acc.result()).to.deep.equal({
        inputTokens: last.usage.prompt_tokens,
        outputTokens: last.usage.completion_tokens,
      });
    });
  });

  describe('an error event after the 200 (the stream did not complete)', () => {
    // Anthropic's documented mid-stream error event (docs, "Error events"): `event: error` with an error object.
    const anthropicError = {
      event: 'error',
      data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    };

    it('anthropic: event: error after some deltas (messages_stream.sse cut after " Captain")', () => {
      const events = [...sseEvents(fixtureBytes('anthropic/messages_stream.sse')).slice(0, 5), anthropicError];
      const acc = stream(anthropic, 'messages', events);
      expect(acc.result()).to.deep.include({ inputTokens: 17, outputTokens: 1, streamError: 'overloaded_error' });
      expect(acc.text()).to.equal('- Captain');
    });

    it('openai chat: a chunk holding an "error" object (chat_stream_without_usage.sse cut after 3 chunks)', () => {
      const events = [
        ...sseEvents(fixtureBytes('openai/chat_stream_without_usage.sse')).slice(0, 3),
        {
          data: '{"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}',
        },
      ];
      const acc = stream(openai, 'chat.completions', events);
      expect(acc.result()).to.deep.equal({ streamError: 'server_error' });
      expect(acc.text()).to.equal('This is');
    });

    it('responses: event: error names its code; response.failed (final usage inside) is not a stream error', () => {
      const failed = {
        type: 'response.failed',
        response: { status: 'failed', error: { code: 'server_error' }, usage: { input_tokens: 5, output_tokens: 2 } },
      };
      const ok = stream(openai, 'responses', [{ event: failed.type, data: JSON.stringify(failed) }]);
      expect(ok.result()).to.deep.equal({ inputTokens: 5, outputTokens: 2 });
      const cut = stream(openai, 'responses', [
        { event: 'response.output_text.delta', data: '{"type":"response.output_text.delta","delta":"par"}' },
        { event: 'error', data: '{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}' },
      ]);
      expect(cut.result()).to.deep.equal({ streamError: 'rate_limit_exceeded' });
    });

    it('generated text that spells an error object is not an error', () => {
      const chunk = { choices: [{ index: 0, delta: { content: '{"error": {"type": "fake"}}' } }] };
      const acc = stream(openai, 'chat.completions', [{ data: JSON.stringify(chunk) }]);
      expect(acc.result()).to.equal(undefined);
      expect(acc.text()).to.equal(chunk.choices[0].delta.content);
    });
  });

  describe('openai: responses', () => {
    it('reads responses.json', () => {
      // usage: input 44, input_tokens_details.cached_tokens 0, output 288, output_tokens_details.reasoning_tokens 9.
      expect(openai.fromJson('responses', fixtureJson('openai/responses.json'))).to.deep.equal({
        inputTokens: 44,
        outputTokens: 288,
        cacheReadTokens: 0,
        reasoningTokens: 9,
        serviceTier: 'default',
      });
    });

    it('reads responses_basic.json', () => {
      // usage: input 11, cached 0, output 5, reasoning 0.
      expect(openai.fromJson('responses', fixtureJson('openai/responses_basic.json'))).to.deep.equal({
        inputTokens: 11,
        outputTokens: 5,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
    });

    it('reads usage from response.completed in a stream (responses_stream.sse)', () => {
      // response.completed -> response.usage: input 11, cached 0, output 5, reasoning 0; one output_text.delta "pong".
      // response.created says service_tier "auto"; response.completed names the tier used, "default".
      const acc = streamFixture(openai, 'responses', 'openai/responses_stream.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 11,
        outputTokens: 5,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
      expect(acc.text()).to.equal('pong');
    });

    it('reads data-only events without event: lines (openrouter/responses_stream.sse, via the openai parser)', () => {
      // response.completed usage: input 20, cached 0, output 19, reasoning 0; output_text.delta "4".
      const acc = streamFixture(openai, 'responses', 'openrouter/responses_stream.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 20,
        outputTokens: 19,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: 'default',
      });
      expect(acc.text()).to.equal('4');
    });

    for (const type of ['response.incomplete', 'response.failed']) {
      it(`reads usage from ${type}, subtracting cached input`, () => {
        const usage = { input_tokens: 50, input_tokens_details: { cached_tokens: 20 }, output_tokens: 7 };
        const acc = stream(openai, 'responses', [
          { event: 'response.output_text.delta', data: '{"type":"response.output_text.delta","delta":"par"}' },
          { event: type, data: JSON.stringify({ type, response: { status: type.slice(9), usage } }) },
        ]);
        expect(acc.result()).to.deep.equal({ inputTokens: 30, outputTokens: 7, cacheReadTokens: 20 });
        expect(acc.text()).to.equal('par');
      });
    }

    it('reports nothing for a cut stream that never reached a terminal event', () => {
      const events = sseEvents(fixtureBytes('openai/responses_stream.sse')).slice(0, 5);
      const acc = stream(openai, 'responses', events);
      expect(acc.result()).to.equal(undefined);
      expect(acc.text()).to.equal('pong');
    });
  });

  describe('openai: other endpoints', () => {
    it('reads embeddings usage (embeddings_float_reformatted.json)', () => {
      // usage: prompt_tokens 8, total_tokens 8; embeddings have no output side.
      expect(openai.fromJson('embeddings', fixtureJson('openai/embeddings_float_reformatted.json'))).to.deep.equal({
        inputTokens: 8,
      });
    });

    it('reads image and transcription answers into the units they are billed by', () => {
      const image = fixtureJson('openai/images_generations_docs_example.json');
      expect(openai.fromJson('images.generations', image)).to.deep.equal({
        inputTokens: image.usage.input_tokens_details.text_tokens,
        inputImageTokens: image.usage.input_tokens_details.image_tokens,
        outputImageTokens: image.usage.output_tokens,
        images: image.data.length,
      });
      const transcript = fixtureJson('openai/audio_transcription_docs_example.json');
      expect(openai.fromJson('audio.transcriptions', transcript)).to.deep.equal({
        inputTokens: transcript.usage.input_token_details.text_tokens,
        inputAudioTokens: transcript.usage.input_token_details.audio_tokens,
        outputTokens: transcript.usage.output_tokens,
      });
    });

    it('reports no usage where there is nothing to bill: the model list, a speech stream without its usage event', () => {
      expect(openai.fromJson('models', fixtureJson('openai/models_list.json'))).to.equal(undefined);
      const acc = streamFixture(openai, 'audio.speech', 'openai/chat_stream_with_usage.sse');
      expect(acc.result() ?? {}, 'no unit read from chat events').to.deep.equal({});
      expect(acc.text()).to.equal('');
    });
  });

  describe('anthropic: messages', () => {
    it('reads messages_basic.json (cache_creation breakdown present, all zero)', () => {
      // usage: input 222, cache_creation_input_tokens 0, cache_read 0, cache_creation {5m: 0, 1h: 0}, output 39.
      expect(anthropic.fromJson('messages', fixtureJson('anthropic/messages_basic.json'))).to.deep.equal({
        inputTokens: 222,
        outputTokens: 39,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        serviceTier: 'standard',
      });
    });

    it('takes input_tokens as is, cache writes from cache_creation_input_tokens (messages_cache_creation.json)', () => {
      // usage: input 4, cache_creation_input_tokens 1163, cache_read 0, output 187 (no cache_creation object).
      expect(anthropic.fromJson('messages', fixtureJson('anthropic/messages_cache_creation.json'))).to.deep.equal({
        inputTokens: 4,
        outputTokens: 187,
        cacheReadTokens: 0,
        cacheWriteTokens: 1163,
      });
    });

    it('splits 1-hour cache writes from the rest', () => {
      const usage = {
        input_tokens: 5,
        cache_creation_input_tokens: 300,
        cache_read_input_tokens: 40,
        cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
        output_tokens: 9,
        server_tool_use: { web_search_requests: 2 },
      };
      expect(anthropic.fromJson('messages', { usage })).to.deep.equal({
        inputTokens: 5,
        outputTokens: 9,
        cacheReadTokens: 40,
        cacheWriteTokens: 100,
        cacheWrite1hTokens: 200,
        searchQueries: 2,
      });
    });

    it('reads a stream: message_start counts, last cumulative output_tokens (messages_stream.sse)', () => {
      // message_start: input 17, cache_creation 0, cache_read 0, cache_creation {5m 0, 1h 0}, output 1.
      // message_delta: input 17, cache_creation 0, cache_read 0, output 10 (cumulative, not 1 + 10).
      const acc = streamFixture(anthropic, 'messages', 'anthropic/messages_stream.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 17,
        outputTokens: 10,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        serviceTier: 'standard',
      });
      expect(acc.text()).to.equal('- Captain\n- Scoop');
    });

    it('keeps the latest value of each field across message_delta events (server tools)', () => {
      const events = [
        { type: 'message_start', message: { usage: { input_tokens: 100, cache_read_input_tokens: 50 } } },
        { type: 'content_block_delta', delta: { type: 'thinking_delta', thinking: 'hm ' } },
        { type: 'content_block_delta', delta: { type: 'input_json_delta', partial_json: '{"q":1}' } },
        { type: 'message_delta', usage: { output_tokens: 10 } },
        {
          type: 'message_delta',
          usage: {
            input_tokens: 120,
            cache_read_input_tokens: 60,
            output_tokens: 30,
            server_tool_use: { web_search_requests: 1 },
          },
        },
        { type: 'content_block_delta', delta: { type: 'text_delta', text: 'ok' } },
        { type: 'message_delta', usage: { output_tokens: 25, input_tokens: null } },
      ];
      const acc = stream(
        anthropic,
        'messages',
        events.map((e) => ({ event: e.type, data: JSON.stringify(e) })),
      );
      expect(acc.result()).to.deep.equal({ inputTokens: 120, outputTokens: 25, cacheReadTokens: 60, searchQueries: 1 });
      expect(acc.text()).to.equal('hm {"q":1}ok');
    });

    it('reports message_start counts when the stream is cut before message_delta', () => {
      // First 5 events: message_start (output_tokens 1), content_block_start, ping, deltas "-" and " Captain".
      const events = sseEvents(fixtureBytes('anthropic/messages_stream.sse')).slice(0, 5);
      const acc = stream(anthropic, 'messages', events);
      expect(acc.result()).to.include({ inputTokens: 17, outputTokens: 1 });
      expect(acc.text()).to.equal('- Captain');
    });

    describe('context compaction (usage.iterations)', () => {
      it('bills the sum over iterations, not the top-level counts (messages_compaction_built.json)', () => {
        // Anthropic's compaction doc example: top level input 23000 / output 1000 (the message iteration only);
        // iterations: compaction 180000 / 3500, message 23000 / 1000. Billed: 180000 + 23000 = 203000 input,
        // 3500 + 1000 = 4500 output.
        expect(anthropic.fromJson('messages', fixtureJson('anthropic/messages_compaction_built.json'))).to.deep.equal({
          inputTokens: 203_000,
          outputTokens: 4_500,
          iterations: [
            { inputTokens: 180_000, outputTokens: 3_500 },
            { inputTokens: 23_000, outputTokens: 1_000 },
          ],
        });
      });

      it("sums the iterations of a stream; the delta's cache read of 0 does not hide the real one", () => {
        // message_delta iterations: compaction input 30000, cache read 150000, output 3500; message input 23000,
        // cache read 0, output 1000. Sum: input 53000, cache read 150000, cache write 0, output 4500.
        const acc = streamFixture(anthropic, 'messages', 'anthropic/messages_compaction_stream_built.sse');
        expect(acc.result()).to.deep.include({
          inputTokens: 53_000,
          outputTokens: 4_500,
          cacheReadTokens: 150_000,
          cacheWriteTokens: 0,
        });
      });

      it("without iterations, keeps message_start's cache read when the final delta restates it as 0", () => {
        const events = sseEvents(fixtureBytes('anthropic/messages_compaction_stream_built.sse')).map((e) =>
          e.event === 'message_delta' ? { ...e, data: e.data.replace(/,"iterations":\[.*\]\}\}$/, '}}') } : e,
        );
        expect(events.find((e) => e.event === 'message_delta')!.data).not.to.contain('iterations');
        const acc = stream(anthropic, 'messages', events);
        // message_start: input 30000, cache read 150000; delta: input 23000 (latest wins), cache read 0 (ignored), output 1000.
        expect(acc.result()).to.deep.equal({
          inputTokens: 23_000,
          outputTokens: 1_000,
          cacheReadTokens: 150_000,
          cacheWriteTokens: 0,
        });
      });

      it('a stream cut after the compaction block reports message_start and relays the summary as text', () => {
        // Events: message_start, compaction block start, its one compaction_delta, block stop.
        const events = sseEvents(fixtureBytes('anthropic/messages_compaction_stream_built.sse')).slice(0, 4);
        const acc = stream(anthropic, 'messages', events);
        expect(acc.result()).to.deep.equal({
          inputTokens: 30_000,
          outputTokens: 1,
          cacheReadTokens: 150_000,
          cacheWriteTokens: 0,
        });
        expect(acc.text()).to.match(/^Summary of the conversation: the user is building a website/);
      });
    });

    it('returns undefined for an error body and for other endpoints', () => {
      expect(anthropic.fromJson('messages', fixtureJson('anthropic/error_404_not_found.json'))).to.equal(undefined);
      expect(anthropic.fromJson('models', fixtureJson('anthropic/messages_basic.json'))).to.equal(undefined);
      expect(anthropic.createStreamAccumulator('models').result()).to.equal(undefined);
    });
  });

  describe('perplexity', () => {
    it('reads sonar_chat_completion.json', () => {
      // usage: prompt 11, completion 392, total 403 (no search/citation/cost fields in this recording).
      const body = fixtureJson('perplexity/sonar_chat_completion.json');
      expect(perplexity.fromJson('chat.completions', body)).to.deep.equal({ inputTokens: 11, outputTokens: 392 });
    });

    it('reads sonar_chat_completion_citations.json', () => {
      // usage: prompt 10, completion 251, total 261.
      const body = fixtureJson('perplexity/sonar_chat_completion_citations.json');
      expect(perplexity.fromJson('chat.completions', body)).to.deep.equal({ inputTokens: 10, outputTokens: 251 });
    });

    it('keeps the last cumulative usage of a stream (sonar_stream.chunks.jsonl framed as SSE)', () => {
      // Every chunk repeats usage; completion_tokens grows 1, 3, 5, 6, 7, 431, 434, 434 with prompt 11.
      const acc = stream(perplexity, 'chat.completions', sseEvents(perplexityStreamAsSse()));
      expect(acc.result()).to.deep.equal({ inputTokens: 11, outputTokens: 434 });
      // The recording keeps only some chunks (SOURCES.md), so the text is what those deltas hold.
      expect(acc.text()).to.equal('**EcoVista Day**[1][5]');
    });

    it('reads the search billing fields (synthetic usage: no recorded response has them, see SOURCES.md)', () => {
      const usage = {
        prompt_tokens: 19,
        completion_tokens: 600,
        total_tokens: 619,
        citation_tokens: 3000,
        num_search_queries: 12,
        reasoning_tokens: 9000,
        search_context_size: 'high',
        cost: { input_tokens_cost: 0.00004, output_tokens_cost: 0.0048, request_cost: 0.012, total_cost: 0.09 },
      };
      // reasoning_tokens are outside completion_tokens for Perplexity: outputTokens = 600 + 9000.
      expect(perplexity.fromJson('chat.completions', { usage })).to.deep.equal({
        inputTokens: 19,
        outputTokens: 9600,
        reasoningTokens: 9000,
        citationTokens: 3000,
        searchQueries: 12,
        searchContextSize: 'high',
        providerCostUsd: '0.09',
        providerCostStepUsd: '0.001',
      });
      const alt = { usage: { prompt_tokens: 5, completion_tokens: 6, search_queries: 1, cost: 0.005 } };
      expect(perplexity.fromJson('chat.completions', alt)).to.deep.equal({
        inputTokens: 5,
        outputTokens: 6,
        searchQueries: 1,
        providerCostUsd: '0.005',
        providerCostStepUsd: '0.001',
      });
    });
  });

  describe('openrouter', () => {
    it('reads cost, cache writes and the serving model (chat_completion_anthropic_cache_write.json)', () => {
      // usage: prompt 3214, cache_write_tokens 3211, cached 0, completion 100, reasoning 0, cost 0.01355025;
      // top-level model "anthropic/claude-4.6-sonnet-20260217". inputTokens = 3214 - 3211 = 3.
      const body = fixtureJson('openrouter/chat_completion_anthropic_cache_write.json');
      expect(openrouter.fromJson('chat.completions', body)).to.deep.equal({
        inputTokens: 3,
        outputTokens: 100,
        cacheReadTokens: 0,
        cacheWriteTokens: 3211,
        reasoningTokens: 0,
        providerCostUsd: '0.01355025',
        servedModel: 'anthropic/claude-4.6-sonnet-20260217',
        generationId: 'gen-1773011155-RKj29WPs25kxzvCwOntV',
      });
    });

    it("BYOK: the cost is OpenRouter's fee plus the provider's upstream_inference_cost (chat_completion_byok_synthetic.json)", () => {
      const text = fixtureBytes('openrouter/chat_completion_byok_synthetic.json').toString('utf8');
      const body = JSON.parse(text);
      expect(body.usage.is_byok).to.equal(true);
      // Independently, from the decimal text of the two figures: fee + upstream, at 12 decimals.
      const fee = /"cost":([\d.]+)/.exec(text)![1];
      const upstream = /"upstream_inference_cost":([\d.]+)/.exec(text)![1];
      const usage = openrouter.fromJson('chat.completions', body)!;
      expect(scaled(usage.providerCostUsd!, 12)).to.equal(scaled(fee, 12) + scaled(upstream, 12));
      expect(scaled(upstream, 12) > 0n, 'the upstream part is not zero').to.equal(true);
      // Not BYOK: upstream_inference_cost (equal to cost there) is already inside cost.
      expect(
        openrouter.fromJson('chat.completions', { ...body, usage: { ...body.usage, is_byok: false } })!.providerCostUsd,
      ).to.equal(fee);
      // BYOK without the upstream part: no reported cost (the fee alone would pass for the whole cost).
      const { cost_details: _gone, ...partial } = body.usage;
      expect(openrouter.fromJson('chat.completions', { ...body, usage: partial })).to.not.have.property(
        'providerCostUsd',
      );
    });

    it('reads a chat stream with comment lines (chat_stream_with_usage.sse)', () => {
      // Final chunk: prompt 254, completion 5, cached 0, cache_write 0, reasoning 0, cost 0.000837.
      const acc = streamFixture(openrouter, 'chat.completions', 'openrouter/chat_stream_with_usage.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 254,
        outputTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        providerCostUsd: '0.000837',
        servedModel: 'anthropic/claude-4.6-sonnet-20260217',
        generationId: 'gen-1773012759-4u9w7As08eMtL75bWtu8',
      });
      expect(acc.text()).to.equal('Hello!');
    });

    it('reads a responses stream with cost (responses_stream.sse)', () => {
      // response.completed: input 20, cached 0, output 19, reasoning 0, cost 0.0000086, model "openai/gpt-5-nano".
      const acc = streamFixture(openrouter, 'responses', 'openrouter/responses_stream.sse');
      expect(acc.result()).to.deep.equal({
        inputTokens: 20,
        outputTokens: 19,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        providerCostUsd: '0.0000086',
        servedModel: 'openai/gpt-5-nano',
        serviceTier: 'default',
        generationId: 'gen-1785882693-G0Ba9AGVEVeNhHohmw0g',
      });
    });

    it('reads embeddings cost and returns undefined for an error body', () => {
      const usage = { prompt_tokens: 8, total_tokens: 8, cost: 1.6e-7 };
      const body = { model: 'openai/text-embedding-3-small', usage };
      expect(openrouter.fromJson('embeddings', body)).to.deep.equal({
        inputTokens: 8,
        providerCostUsd: '0.00000016',
        servedModel: 'openai/text-embedding-3-small',
      });
      const error = fixtureJson('openrouter/error_429_upstream_rate_limited.json');
      expect(openrouter.fromJson('chat.completions', error)).to.equal(undefined);
    });
  });

  describe('decimalString', () => {
    it('writes the shortest round-trip digits without exponent notation', () => {
      expect(decimalString(0.01355025)).to.equal('0.01355025');
      expect(decimalString(0.0000086)).to.equal('0.0000086');
      expect(decimalString(1e-7)).to.equal('0.0000001');
      expect(decimalString(1.25e-10)).to.equal('0.000000000125');
      expect(decimalString(0)).to.equal('0');
      expect(decimalString(12)).to.equal('12');
      expect(decimalString(1e21)).to.equal('1000000000000000000000');
      expect(decimalString(-2.5e-8)).to.equal('-0.000000025');
    });
  });
});
