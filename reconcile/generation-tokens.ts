/**
 * The tokens of an OpenRouter generation beside its record's. The generation API gives the counts of the provider
 * that served it (`native_tokens_prompt`, `native_tokens_completion`, `native_tokens_cached`): the counts it bills,
 * and the ones the answer's usage reported to the gateway. `tokens_prompt` and `tokens_completion` are OpenRouter's
 * own count with one tokenizer for every model, which no bill uses, so they are not compared.
 */
import type { UsageRecord } from '../records/usage-record';
import type { BillTokens } from './bill';

/** Prompt (cached reads and cache writes included), completion (reasoning included), cached reads. */
export interface GenerationTokens {
  prompt: number;
  completion: number;
  /** Null when the generation does not say (native_tokens_cached null). */
  cached: number | null;
}

export type RecordedTokens = Pick<
  UsageRecord,
  'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'cacheWrite1hTokens'
> &
  Pick<UsageRecord, 'inputAudioTokens' | 'outputAudioTokens'>;

const count = (n: unknown): number | null => (typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : null);

/** The native counts of a generation body's `data`; null when it gives no prompt or completion count. */
export function generationTokens(data: Record<string, unknown> | undefined): GenerationTokens | null {
  const prompt = count(data?.native_tokens_prompt);
  const completion = count(data?.native_tokens_completion);
  if (prompt === null || completion === null) return null;
  return { prompt, completion, cached: count(data?.native_tokens_cached) };
}

/** The record's buckets (disjoint: providers/wire/chat-completions.ts) added back into the provider's two counts. */
export function recordTokens(r: RecordedTokens): GenerationTokens {
  const n = (v: number | null | undefined) => v ?? 0;
  return {
    prompt:
      n(r.inputTokens) + n(r.cacheReadTokens) + n(r.cacheWriteTokens) + n(r.cacheWrite1hTokens) + n(r.inputAudioTokens),
    completion: n(r.outputTokens) + n(r.outputAudioTokens),
    cached: n(r.cacheReadTokens),
  };
}

/** Same prompt and completion counts, and the same cached reads where the generation gives them. */
export function sameTokens(recorded: GenerationTokens, billed: GenerationTokens): boolean {
  return (
    recorded.prompt === billed.prompt &&
    recorded.completion === billed.completion &&
    (billed.cached === null || billed.cached === recorded.cached)
  );
}

/** A generation's counts as a bill line's tokens: the generation does not tell cache writes from other input. */
export function billTokensOf(t: GenerationTokens): BillTokens {
  const cached = Math.min(t.cached ?? 0, t.prompt);
  return { input: t.prompt - cached, cacheRead: cached, cacheWrite: 0, output: t.completion };
}
