/**
 * Anthropic's Usage & Cost Admin API: the messages usage report (daily buckets grouped by model and workspace;
 * uncached input, cache reads, 5-minute and 1-hour cache writes, output) and the cost report (daily, grouped by
 * workspace and description, amounts in cents as decimal strings). The cost report leaves out Priority Tier
 * costs; a null workspace is the default workspace.
 */
import { costLine, linesOf, tokenCount, type Bill, type BillLine, type ReaderRange } from './bill';
import { fetchAllPages, type FetchOptions } from './fetch-pages';
import { picoFrom, requireUsd } from './units';

export const ANTHROPIC_ADMIN_BASE = 'https://api.anthropic.com/v1';
export const ANTHROPIC_VERSION = '2023-06-01';

interface Bucket<R> {
  starting_at: string;
  ending_at: string;
  results: R[];
}

interface MessagesUsageResult {
  model?: string | null;
  workspace_id?: string | null;
  uncached_input_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number };
  output_tokens?: number;
}

interface CostResult {
  currency?: unknown;
  amount?: unknown;
  workspace_id?: string | null;
  model?: string | null;
}

const count = tokenCount;

function reportUrl(base: string, path: string, range: ReaderRange, groupBy: string[]): URL {
  const url = new URL(`${base.replace(/\/+$/, '')}${path}`);
  url.searchParams.set('starting_at', new Date(range.from).toISOString());
  url.searchParams.set('ending_at', new Date(range.to).toISOString());
  url.searchParams.set('bucket_width', '1d');
  for (const g of groupBy) url.searchParams.append('group_by[]', g);
  url.searchParams.set('limit', '31');
  return url;
}

export async function readAnthropicBill(
  base: string,
  adminKey: string,
  range: ReaderRange,
  fetch: Omit<FetchOptions, 'headers'>,
): Promise<Bill> {
  const opts: FetchOptions = { ...fetch, headers: { 'x-api-key': adminKey, 'anthropic-version': ANTHROPIC_VERSION } };
  const usage = await fetchAllPages<Bucket<MessagesUsageResult>>(
    reportUrl(base, '/organizations/usage_report/messages', range, ['model', 'workspace_id']),
    'Anthropic usage_report/messages',
    opts,
  );
  const costs = await fetchAllPages<Bucket<CostResult>>(
    reportUrl(base, '/organizations/cost_report', range, ['workspace_id', 'description']),
    'Anthropic cost_report',
    opts,
  );
  const dayOf = (bucket: { starting_at: string }) => bucket.starting_at.slice(0, 10);
  const lines = [
    ...linesOf(usage.items, dayOf, (r: MessagesUsageResult, day): BillLine => ({
      day,
      provider: 'anthropic',
      model: r.model ?? null,
      scope: r.workspace_id ?? null,
      requests: null,
      tokens: {
        input: count(r.uncached_input_tokens),
        cacheRead: count(r.cache_read_input_tokens),
        cacheWrite:
          count(r.cache_creation?.ephemeral_5m_input_tokens) + count(r.cache_creation?.ephemeral_1h_input_tokens),
        output: count(r.output_tokens),
      },
      costPico: null,
    })),
    ...linesOf(costs.items, dayOf, (r: CostResult, day) => {
      requireUsd(r.currency);
      return costLine(day, 'anthropic', r.model ?? null, r.workspace_id ?? null, picoFrom(r.amount, 'cents'));
    }),
  ];
  return {
    provider: 'anthropic',
    ...range,
    lines,
    pages: { 'usage_report/messages': usage.pages, cost_report: costs.pages },
  };
}
