/**
 * A provider that keeps to the request's limits: the recorded gpt-4o-mini chat completion, its usage rewritten to
 * `promptTokens` input tokens (fewer than the body's size bounds) and as many output tokens as the request allowed.
 * The worst case a budget reserves then covers every answer, so a spend past a limit is the gateway's fault.
 */
import { fixtureJson } from './fixtures';
import type { Responder } from './upstream';

export function boundedChatAnswer(promptTokens: number, sent?: (outputLimit: number) => void): Responder {
  const recorded = fixtureJson('openai/chat_completion_cached_tokens.json');
  return (_req, body) => {
    const limit = (body?.max_completion_tokens ?? body?.max_tokens) as number;
    sent?.(limit);
    const answer = {
      ...recorded,
      model: 'gpt-4o-mini',
      usage: {
        ...recorded.usage,
        prompt_tokens: promptTokens,
        completion_tokens: limit,
        total_tokens: promptTokens + limit,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      },
    };
    return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(answer)) };
  };
}
