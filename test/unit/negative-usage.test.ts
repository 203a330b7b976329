import { expect } from 'chai';
import { SseDecoder } from '../../core/sse';
import type { UsageParser } from '../../core/usage';
import { USAGE_PARSERS } from '../../providers/registry';

/**
 * A provider (or something posing as one) that reports a negative count has not reported a usable one: the
 * record must not carry negative tokens, which would lower every total they are summed into.
 */
describe('usage reported with negative counts', () => {
  const { openai, anthropic } = USAGE_PARSERS as Record<'openai' | 'anthropic', UsageParser>;

  it('a JSON body: the negative count reads as not reported, the others are kept', () => {
    expect(
      openai.fromJson('chat.completions', { usage: { prompt_tokens: 10, completion_tokens: -5, total_tokens: 5 } }),
    ).to.deep.equal({ inputTokens: 10 });
    expect(anthropic.fromJson('messages', { usage: { input_tokens: -1, output_tokens: 7 } })).to.deep.equal({
      outputTokens: 7,
    });
    expect(openai.fromJson('chat.completions', { usage: { prompt_tokens: -3, completion_tokens: -5 } })).to.equal(
      undefined,
    );
  });

  it('a stream: the same', () => {
    const acc = openai.createStreamAccumulator('chat.completions');
    const decoder = new SseDecoder();
    for (const event of [
      ...decoder.push(
        'data: {"usage":{"prompt_tokens":"many","completion_tokens":-5,"total_tokens":null}}\n\ndata: [DONE]\n\n',
      ),
      ...decoder.end(),
    ])
      acc.push(event);
    expect(acc.result()).to.equal(undefined);
  });
});
