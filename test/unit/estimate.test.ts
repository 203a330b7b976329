import { expect } from 'chai';
import type { Tiktoken, TiktokenBPE } from 'js-tiktoken/lite' with { 'resolution-mode': 'import' };
import { countTokens, encodingForModel, estimateRequestInputTokens } from '../../providers/tokenizer';
import { SseDecoder } from '../../core/sse';
import { USAGE_PARSERS } from '../../providers/registry';
import { fixtureBytes } from '../helpers/fixtures';

/** js-tiktoken's own encoder, the reference the fast counter must agree with. */
function reference(rankModule: string): Tiktoken {
  const { Tiktoken: TiktokenClass } = require('js-tiktoken/lite') as { Tiktoken: new (ranks: TiktokenBPE) => Tiktoken };
  return new TiktokenClass(require(rankModule) as TiktokenBPE);
}

function streamedText(file: string, endpoint: 'chat.completions' | 'messages', parser: string): string {
  const acc = USAGE_PARSERS[parser]!.createStreamAccumulator(endpoint);
  const d = new SseDecoder();
  for (const e of [...d.push(fixtureBytes(file)), ...d.end()]) acc.push(e);
  return acc.text();
}

describe('token estimation', () => {
  before(function () {
    this.timeout(20000);
    countTokens('warm up', 'gpt-4o'); // rank files load once, lazily
    countTokens('warm up', 'gpt-4');
  });

  describe('countTokens', () => {
    it('counts "hello world" as 2 tokens', () => {
      // "hello" and " world" (leading space included) are each one token in every OpenAI BPE vocabulary.
      expect(countTokens('hello world', 'gpt-4o')).to.equal(2);
      expect(countTokens('hello world', 'gpt-4')).to.equal(2);
      expect(countTokens('', 'gpt-4o')).to.equal(0);
    });

    it('matches real completion_tokens of recorded streams (o200k_base)', () => {
      // openai/chat_stream_with_usage.sse, gpt-4o-mini: streamed text has completion_tokens 12.
      const short = streamedText('openai/chat_stream_with_usage.sse', 'chat.completions', 'openai');
      expect(countTokens(short, 'gpt-4o-mini')).to.equal(12);
      // openai/chat_stream_with_usage_openai-python.sse, gpt-4o-2024-08-06: completion_tokens 30.
      const text = streamedText('openai/chat_stream_with_usage_openai-python.sse', 'chat.completions', 'openai');
      expect(countTokens(text, 'gpt-4o-2024-08-06')).to.equal(30);
    });

    it('agrees exactly with js-tiktoken Tiktoken.encode on varied text', function () {
      this.timeout(30000); // the reference encoder is the slow one
      const samples = [
        fixtureBytes('SOURCES.md').toString('utf8'),
        fixtureBytes('openai/responses.json').toString('utf8'),
        fixtureBytes('anthropic/messages_stream.sse').toString('utf8'),
        "It's done, isn't it? They'll've gone; we'd   see.\r\n\r\n\ttabs  and   spaces   ",
        '中文字符测试，日本語のテキスト。한국어 텍스트! 😀👍🏽 é è ñ ß',
        '<|endoftext|> and <|endofprompt|> are plain text here',
        '3.14159265358979 1234567890 0x1F 1e-7',
        'x'.repeat(300) + ' ' + 'Ab'.repeat(200),
      ];
      for (const [model, rankModule] of [
        ['gpt-4o', 'js-tiktoken/ranks/o200k_base'],
        ['gpt-4', 'js-tiktoken/ranks/cl100k_base'],
      ] as const) {
        const ref = reference(rankModule);
        for (const s of samples) {
          expect(countTokens(s, model), `${model}: ${s.slice(0, 30)}`).to.equal(ref.encode(s, [], []).length);
        }
      }
    });

    it('is fast on 100 KB of text, including text without spaces', function () {
      this.timeout(20000);
      const clauses = ['我们今天去公园散步', '天气非常好', '人工智能正在改变世界', '网关记录令牌使用量和费用'];
      let chinese = '';
      for (let i = 0; chinese.length < 100_000; i++) chinese += clauses[i % clauses.length] + (i % 2 ? '，' : '。');
      const english = 'The gateway records token usage and cost for every request. '.repeat(1700);
      for (const text of [english, chinese, 'a'.repeat(100_000), '😀'.repeat(50_000), ' '.repeat(100_000)]) {
        const started = Date.now();
        expect(countTokens(text, 'gpt-4o')).to.be.greaterThan(0);
        expect(Date.now() - started, `${text.slice(0, 10)}...`).to.be.lessThan(1500);
      }
    });

    it('picks o200k_base for current OpenAI models and cl100k_base otherwise', () => {
      const o200k = ['gpt-4o', 'gpt-4o-mini-2024-07-18', 'gpt-4.1-nano', 'gpt-5.5', 'o3-mini', 'o1'];
      o200k.push('openai/gpt-5-nano', 'ft:gpt-4o-mini:org::abc');
      for (const m of o200k) expect(encodingForModel(m), m).to.equal('o200k_base');
      const cl100k = ['gpt-4', 'gpt-4-turbo', 'gpt-3.5-turbo', 'text-embedding-3-small', 'claude-sonnet-4-5', 'sonar'];
      for (const m of [...cl100k, 'gemini-2.5-pro']) expect(encodingForModel(m), m).to.equal('cl100k_base');
    });
  });

  describe('estimateRequestInputTokens', () => {
    it('reproduces prompt_tokens of recorded chat requests', () => {
      // openai/chat_stream_with_usage.sse reports prompt_tokens 12 for the cassette's request
      // {"messages":[{"role":"user","content":"Say this is a test"}],"model":"gpt-4o-mini"}:
      // 3 (message) + 1 ("user") + 5 ("Say this is a test") + 3 (reply priming) = 12.
      const sayTest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say this is a test' }] };
      expect(estimateRequestInputTokens('chat.completions', sayTest, 'gpt-4o-mini')).to.equal(12);
      // openai/chat_stream_with_usage_openai-python.sse (test_parse_nothing) reports prompt_tokens 14 for
      // [{"role":"user","content":"What's the weather like in SF?"}] with gpt-4o-2024-08-06.
      const weather = { messages: [{ role: 'user', content: "What's the weather like in SF?" }] };
      expect(estimateRequestInputTokens('chat.completions', weather, 'gpt-4o-2024-08-06')).to.equal(14);
    });

    it('stays within a sane range of Anthropic input_tokens (cl100k_base approximation)', () => {
      // anthropic/messages_stream.sse reports input_tokens 17 for the llm-anthropic cassette's request
      // {"messages":[{"role":"user","content":[{"type":"text","text":"Two names for a pet pelican, be brief"}]}]}.
      const content = [{ type: 'text', text: 'Two names for a pet pelican, be brief' }];
      const body = { messages: [{ role: 'user', content }] };
      const estimate = estimateRequestInputTokens('messages', body, 'claude-sonnet-4-5');
      expect(estimate).to.be.within(17 / 2, 17 * 2);
    });

    it('counts system prompts, instructions, tool calls and tool definitions', () => {
      const base = { messages: [{ role: 'user', content: 'hi' }] };
      const plain = estimateRequestInputTokens('messages', base, 'claude-x');
      const withSystem = estimateRequestInputTokens('messages', { ...base, system: 'Be brief.' }, 'claude-x');
      expect(withSystem).to.be.greaterThan(plain);
      const blocks = { ...base, system: [{ type: 'text', text: 'Be brief.' }] };
      expect(estimateRequestInputTokens('messages', blocks, 'claude-x')).to.equal(withSystem);
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
      expect(estimateRequestInputTokens('chat.completions', { ...base, tools }, 'gpt-4o')).to.be.greaterThan(
        estimateRequestInputTokens('chat.completions', base, 'gpt-4o'),
      );
      const withCall = {
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: '1', type: 'function', function: { name: 'f', arguments: '{"city":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: '1', content: 'sunny' },
        ],
      };
      // 3 priming + 2 x 3 framing + roles, plus "f", the arguments JSON and "sunny".
      expect(estimateRequestInputTokens('chat.completions', withCall, 'gpt-4o')).to.be.greaterThan(3 + 6 + 2 + 3);
    });

    it('estimates Responses input given as a string or as items', () => {
      const asString = estimateRequestInputTokens('responses', { input: 'Say this is a test' }, 'gpt-4o');
      const asItems = estimateRequestInputTokens(
        'responses',
        { input: [{ role: 'user', content: [{ type: 'input_text', text: 'Say this is a test' }] }] },
        'gpt-4o',
      );
      expect(asString).to.equal(12);
      expect(asItems).to.equal(12);
      const instructed = { input: 'Say this is a test', instructions: 'Be brief.' };
      expect(estimateRequestInputTokens('responses', instructed, 'gpt-4o')).to.be.greaterThan(12);
    });

    it('does not count image payloads as text', () => {
      const text = { messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }] }] };
      const withImage = {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(10_000)}` } },
            ],
          },
        ],
      };
      expect(estimateRequestInputTokens('chat.completions', withImage, 'gpt-4o')).to.equal(
        estimateRequestInputTokens('chat.completions', text, 'gpt-4o'),
      );
    });

    it('counts embeddings input with no framing', () => {
      const embed = (input: unknown) => estimateRequestInputTokens('embeddings', { input }, 'text-embedding-3-small');
      expect(embed('hello world')).to.equal(2);
      expect(embed(['hello world', 'hello world'])).to.equal(4);
      expect(embed([1, 2, 3])).to.equal(3); // one pre-tokenized input
      expect(embed([[1, 2], [3]])).to.equal(3);
    });

    it('returns 0 for bodies it cannot read and endpoints without text input', () => {
      expect(estimateRequestInputTokens('chat.completions', null, 'gpt-4o')).to.equal(0);
      expect(estimateRequestInputTokens('chat.completions', { messages: 'x' }, 'gpt-4o')).to.equal(0);
      expect(estimateRequestInputTokens('models', {}, 'gpt-4o')).to.equal(0);
    });
  });
});
