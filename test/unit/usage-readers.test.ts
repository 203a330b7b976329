import { expect } from 'chai';
import type { EndpointKey, SseEvent, StreamUsageAccumulator, UsageParser } from '../../core/usage';
import { USAGE_PARSERS } from '../../providers/registry';
import { costString, reported } from '../../providers/wire/read';

const { openai, anthropic, perplexity, openrouter } = USAGE_PARSERS as Record<
  'openai' | 'anthropic' | 'perplexity' | 'openrouter',
  UsageParser
>;

/** A stream accumulator fed the given events (data-only unless an event name is given). */
function stream(parser: UsageParser, endpoint: EndpointKey, events: (SseEvent | object)[]): StreamUsageAccumulator {
  const acc = parser.createStreamAccumulator(endpoint);
  for (const e of events)
    acc.push('data' in e && typeof e.data === 'string' ? (e as SseEvent) : { data: JSON.stringify(e) });
  return acc;
}

describe('usage readers: edge cases of provider payloads', () => {
  describe('counts', () => {
    it('a count that is not a finite number is not reported (strings, overflowing numbers, null)', () => {
      // JSON.parse reads 1e999 as Infinity
      const body = JSON.parse(
        '{"usage":{"prompt_tokens":"12","completion_tokens":1e999,"total_tokens":null,"prompt_tokens_details":{"cached_tokens":4}}}',
      );
      expect(openai.fromJson('chat.completions', body)).to.deep.equal({ cacheReadTokens: 4 });
    });

    it('total_tokens below prompt + completion adds nothing to the output', () => {
      expect(
        openai.fromJson('chat.completions', { usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 5 } }),
      ).to.deep.equal({ inputTokens: 10, outputTokens: 3 });
      expect(
        openai.fromJson('chat.completions', { usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 } }),
      ).to.deep.equal({ inputTokens: 10, outputTokens: 3 });
    });

    it('a usage object holding only the serving model or the search context size reports no usage', () => {
      expect(reported({ servedModel: 'openai/gpt-4o' })).to.equal(undefined);
      expect(reported({ searchContextSize: 'low' })).to.equal(undefined);
      expect(reported({ servedModel: 'x', searchContextSize: 'low' })).to.equal(undefined);
      expect(reported({ servedModel: 'x', outputTokens: 0 })).to.deep.equal({ servedModel: 'x', outputTokens: 0 });
      expect(
        openrouter.fromJson('chat.completions', { model: 'openai/gpt-4o', usage: { total_cost: 'n/a' } }),
      ).to.equal(undefined);
      expect(perplexity.fromJson('chat.completions', { usage: { search_context_size: 'low' } })).to.equal(undefined);
    });

    it('a cost is a finite number or an object with a numeric total_cost', () => {
      expect(costString(0.0021)).to.equal('0.0021');
      expect(costString({ total_cost: 1.5e-7 })).to.equal('0.00000015');
      expect(costString(undefined)).to.equal(undefined);
      expect(costString({ total_cost: '0.1' })).to.equal(undefined);
      expect(costString(JSON.parse('1e999'))).to.equal(undefined);
      expect(costString(Number.NaN)).to.equal(undefined);
    });

    it('the serving model is read only when it is a string', () => {
      expect(
        openrouter.fromJson('chat.completions', { model: 42, usage: { prompt_tokens: 1, cost: 0.5 } }),
      ).to.deep.equal({ inputTokens: 1, providerCostUsd: '0.5' });
    });
  });

  describe('OpenRouter BYOK', () => {
    it('without the upstream part, no cost is reported (the fee alone is not the cost)', () => {
      expect(
        openrouter.fromJson('chat.completions', { usage: { prompt_tokens: 1, cost: 0.0001, is_byok: true } }),
      ).to.deep.equal({ inputTokens: 1 });
      expect(
        openrouter.fromJson('chat.completions', {
          usage: { prompt_tokens: 1, is_byok: true, cost_details: { upstream_inference_cost: 0.002 } },
        }),
      ).to.deep.equal({ inputTokens: 1 });
      expect(
        openrouter.fromJson('chat.completions', {
          usage: { prompt_tokens: 1, cost: 0.0001, is_byok: true, cost_details: { upstream_inference_cost: 0.002 } },
        }),
      ).to.deep.equal({
        inputTokens: 1,
        providerCostUsd: '0.0021',
      });
    });
  });

  describe('Perplexity', () => {
    it('adds reasoning_tokens to the output only when both are reported', () => {
      expect(perplexity.fromJson('chat.completions', { usage: { reasoning_tokens: 5 } })).to.deep.equal({
        reasoningTokens: 5,
      });
      expect(perplexity.fromJson('chat.completions', { usage: { completion_tokens: 7 } })).to.deep.equal({
        outputTokens: 7,
      });
      expect(
        perplexity.fromJson('chat.completions', { usage: { completion_tokens: 7, reasoning_tokens: 5 } }),
      ).to.deep.equal({ outputTokens: 12, reasoningTokens: 5 });
    });

    it('reads the cost the Agent API (responses shape) reports', () => {
      expect(
        perplexity.fromJson('responses', {
          usage: { input_tokens: 10, output_tokens: 4, cost: { total_cost: 0.006 } },
        }),
      ).to.deep.equal({
        inputTokens: 10,
        outputTokens: 4,
        providerCostUsd: '0.006',
        providerCostStepUsd: '0.001',
      });
    });
  });

  describe('Anthropic cache writes', () => {
    const usage = (u: object) => anthropic.fromJson('messages', { usage: u });

    it('splits 1-hour writes out of cache_creation_input_tokens, never below zero', () => {
      expect(
        usage({
          cache_creation_input_tokens: 30,
          cache_creation: { ephemeral_1h_input_tokens: 10, ephemeral_5m_input_tokens: 20 },
        }),
      ).to.deep.equal({
        cacheWriteTokens: 20,
        cacheWrite1hTokens: 10,
      });
      expect(
        usage({ cache_creation_input_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: 10 } }),
      ).to.deep.equal({ cacheWriteTokens: 0, cacheWrite1hTokens: 10 });
    });

    it('takes the 5-minute count when only the breakdown is given', () => {
      expect(usage({ cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 10 } })).to.deep.equal(
        { cacheWriteTokens: 20, cacheWrite1hTokens: 10 },
      );
      expect(usage({ cache_creation: { ephemeral_5m_input_tokens: 20 } })).to.deep.equal({ cacheWriteTokens: 20 });
    });
  });

  describe('Responses usage', () => {
    it('subtracts cache writes from input_tokens too', () => {
      expect(
        openai.fromJson('responses', {
          usage: {
            input_tokens: 100,
            output_tokens: 5,
            input_tokens_details: { cached_tokens: 30, cache_write_tokens: 20 },
          },
        }),
      ).to.deep.equal({
        inputTokens: 50,
        outputTokens: 5,
        cacheReadTokens: 30,
        cacheWriteTokens: 20,
      });
    });
  });

  describe('streams', () => {
    it('finds the usage object with any blank around the colon', () => {
      for (const blank of [' ', '\t', '\n', '\r', ' \t\r\n ']) {
        const acc = stream(openai, 'chat.completions', [
          { data: `{"choices":[],"usage"${blank}:${blank}{"prompt_tokens":3,"completion_tokens":2}}` },
        ]);
        expect(acc.result(), JSON.stringify(blank)).to.deep.equal({ inputTokens: 3, outputTokens: 2 });
      }
      // and a payload starting with blanks
      expect(
        stream(openai, 'chat.completions', [{ data: ' \t{"choices":[],"usage":{"prompt_tokens":3}}' }]).result(),
      ).to.deep.equal({ inputTokens: 3 });
    });

    it('a tool call delta without arguments adds no text', () => {
      const acc = stream(openai, 'chat.completions', [
        {
          choices: [
            { delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup' } }] } },
          ],
        },
        { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"q":1}' } }] } }] },
      ]);
      expect(acc.text()).to.equal('{"q":1}');
    });

    it('collects legacy function_call arguments as generated text', () => {
      const acc = stream(openai, 'chat.completions', [
        { choices: [{ delta: { function_call: { name: 'f', arguments: '{"a":' } } }] },
        { choices: [{ delta: { function_call: { arguments: '1}' } } }] },
      ]);
      expect(acc.text()).to.equal('{"a":1}');
    });

    it('Anthropic without event: lines is read by the JSON type; other types carry no usage', () => {
      const acc = stream(anthropic, 'messages', [
        { type: 'message_start', message: { usage: { input_tokens: 9, output_tokens: 1 } } },
        { type: 'content_block_delta', delta: { type: 'text_delta', text: 'Hi' } },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } },
        { type: 'ping', usage: { output_tokens: 999 } },
      ]);
      expect(acc.result()).to.deep.equal({ inputTokens: 9, outputTokens: 4 });
      expect(acc.text()).to.equal('Hi');
    });

    it('Responses with event: lines: function-call argument deltas are generated text', () => {
      const acc = stream(openai, 'responses', [
        {
          event: 'response.function_call_arguments.delta',
          data: '{"type":"response.function_call_arguments.delta","delta":"{\\"city\\":"}',
        },
        {
          event: 'response.function_call_arguments.delta',
          data: '{"type":"response.function_call_arguments.delta","delta":"\\"Paris\\"}"}',
        },
      ]);
      expect(acc.text()).to.equal('{"city":"Paris"}');
    });

    it('Responses: only terminal events give the usage, only text deltas the text (data-only events)', () => {
      const acc = stream(openai, 'responses', [
        { type: 'response.reasoning_summary_text.delta', delta: 'thinking' },
        { type: 'response.output_text.delta', delta: 'Hel' },
        { type: 'response.refusal.delta', delta: 'lo' },
        { type: 'response.function_call_arguments.delta', delta: '{}' },
        { type: 'response.completed', response: { usage: { input_tokens: 7, output_tokens: 2 } } },
        { type: 'response.in_progress', response: { usage: { input_tokens: 999, output_tokens: 999 } } },
      ]);
      expect(acc.result()).to.deep.equal({ inputTokens: 7, outputTokens: 2 });
      expect(acc.text()).to.equal('Hello{}');
    });

    describe('errors after the 200', () => {
      const errorOf = (events: (SseEvent | object)[], parser = openai, endpoint: EndpointKey = 'chat.completions') =>
        (stream(parser, endpoint, events).result() as { streamError?: string } | undefined)?.streamError;

      it("names the error by its type, else its code (string or number), else the event's code", () => {
        expect(errorOf([{ error: { code: 'rate_limit_exceeded', message: 'slow down' } }])).to.equal(
          'rate_limit_exceeded',
        );
        expect(errorOf([{ error: { code: 429, message: 'slow down' } }])).to.equal('429');
        expect(errorOf([{ error: { type: 'server_error', code: 'ignored' } }])).to.equal('server_error');
        expect(
          errorOf([{ event: 'error', data: '{"type":"error","code":"overloaded"}' }], openai, 'responses'),
        ).to.equal('overloaded');
      });

      it('an error without a usable name is stream_error, and a long name is cut to 64 characters', () => {
        expect(errorOf([{ error: { message: 'no code' } }])).to.equal('stream_error');
        expect(errorOf([{ error: { code: '' } }])).to.equal('stream_error');
        expect(errorOf([{ error: { type: 'x'.repeat(100) } }])).to.equal('x'.repeat(64));
      });

      it('an error event without an error object or error type, and a named event that is not error, are no stream error', () => {
        expect(errorOf([{ event: 'error', data: '{"message":"bye"}' }], anthropic, 'messages')).to.equal(undefined);
        expect(
          errorOf(
            [
              {
                event: 'message_delta',
                data: '{"type":"message_delta","error":{"type":"x"},"usage":{"output_tokens":5}}',
              },
            ],
            anthropic,
            'messages',
          ),
        ).to.equal(undefined);
        // data-only response.failed: the error sits inside the response, which carries the final usage
        const failed = stream(openrouter, 'responses', [
          {
            type: 'response.failed',
            response: { error: { code: 'server_error' }, usage: { input_tokens: 5, output_tokens: 2 } },
          },
        ]);
        expect(failed.result()).to.deep.equal({ inputTokens: 5, outputTokens: 2 });
      });

      it('the usage read before the error is kept', () => {
        const acc = stream(openai, 'chat.completions', [
          { choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } },
          { error: { type: 'server_error' } },
        ]);
        expect(acc.result()).to.deep.equal({ inputTokens: 3, outputTokens: 1, streamError: 'server_error' });
      });
    });
  });
});
