/**
 * Replies of the providers' admin usage and cost endpoints, for a TestUpstream: OpenAI under /openai/v1, Anthropic
 * under /anthropic/v1, from the built payloads in test/fixtures/reconcile (see SOURCES.md). The page asked for is in
 * the `page` query parameter, as both providers take it.
 */
import { fixtureBytes } from './fixtures';
import type { Reply } from './upstream';

export const jsonReply = (body: unknown, status = 200, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)),
});

const fixture = (file: string) => jsonReply(fixtureBytes(`reconcile/${file}`));

export function providerAdminApi(req: { url: string }): Reply | undefined {
  const url = new URL(req.url, 'http://x');
  const page = url.searchParams.get('page');
  if (url.pathname === '/openai/v1/organization/usage/completions')
    return fixture(page === null ? 'openai_usage_completions_page1.json' : 'openai_usage_completions_page2.json');
  if (url.pathname === '/openai/v1/organization/costs') return fixture('openai_costs.json');
  if (url.pathname === '/anthropic/v1/organizations/usage_report/messages')
    return fixture('anthropic_usage_messages.json');
  if (url.pathname === '/anthropic/v1/organizations/cost_report')
    return fixture(page === null ? 'anthropic_cost_report_page1.json' : 'anthropic_cost_report_page2.json');
  return undefined;
}

const DAY = 24 * 3600 * 1000;

/** An Anthropic cost report of one page: [day, model, cents] per line. */
export function anthropicCostReport(lines: [number, string, string][]) {
  const days = [...new Set(lines.map(([d]) => d))];
  return {
    data: days.map((day) => ({
      starting_at: new Date(day).toISOString().replace('.000', ''),
      ending_at: new Date(day + DAY).toISOString().replace('.000', ''),
      results: lines
        .filter(([d]) => d === day)
        .map(([, model, amount]) => ({
          currency: 'USD',
          amount,
          workspace_id: null,
          description: `${model} usage`,
          cost_type: 'tokens',
          model,
          service_tier: 'standard',
          token_type: 'uncached_input_tokens',
        })),
    })),
    has_more: false,
    next_page: null,
  };
}

/** Native token counts of an OpenRouter generation. */
export interface NativeTokens {
  prompt: number;
  completion: number;
  cached: number;
}

/**
 * OpenRouter's generation API answering for one generation: its recorded body (openrouter/generation_recorded.json)
 * with the generation's own id, model, total_cost and native token counts; a 404 when `billed` is null.
 */
export function generationReply(id: string, model: string, billed: { cost: number; tokens: NativeTokens } | null) {
  if (billed === null) return jsonReply({ error: { message: `Generation ${id} not found`, code: 404 } }, 404);
  const body = JSON.parse(fixtureBytes('openrouter/generation_recorded.json').toString('utf8'));
  Object.assign(body.data, {
    id,
    model,
    total_cost: billed.cost,
    usage: billed.cost,
    native_tokens_prompt: billed.tokens.prompt,
    native_tokens_completion: billed.tokens.completion,
    native_tokens_cached: billed.tokens.cached,
  });
  return jsonReply(body);
}
