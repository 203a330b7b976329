/** What the test upstream's chat answer costs, worked out by hand from the bundled catalog (not by the gateway). */
import { fixtureJson, PROJECT_ROOT } from './fixtures';

const catalog = require(`${PROJECT_ROOT}/pricing/catalog.json`);
export const GPT_4O_MINI = catalog.models.find((m: any) => m.provider === 'openai' && m.model === 'gpt-4o-mini');

/** A catalog price (USD per million tokens) as pico-USD per token. */
export function picoPerToken(usdPerMillion: string): bigint {
  const [w, f = ''] = usdPerMillion.split('.');
  return BigInt(w + f.padEnd(6, '0'));
}

/** Actual cost of one recorded answer (the cached-tokens fixture) of gpt-4o-mini, in pico-USD. */
export function cachedAnswerCost(): bigint {
  const u = fixtureJson('openai/chat_completion_cached_tokens.json').usage;
  const cached = u.prompt_tokens_details.cached_tokens;
  return (
    BigInt(u.prompt_tokens - cached) * picoPerToken(GPT_4O_MINI.input) +
    BigInt(cached) * picoPerToken(GPT_4O_MINI.cache_read) +
    BigInt(u.completion_tokens) * picoPerToken(GPT_4O_MINI.output)
  );
}
