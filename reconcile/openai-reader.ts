/**
 * OpenAI's organization reports: the Usage API for completions (daily buckets grouped by model and project; input
 * tokens there include the cached ones, taken apart here as the gateway records them) and the Costs API (daily
 * buckets grouped by project and line item, dollars as JSON numbers). A line item reads "<model>, <kind>"; one
 * without a model (a tool fee, a credit) stays a line of its own with no model.
 */
import { costLine, DAY_MS, linesOf, tokenCount, utcDay, type Bill, type BillLine, type ReaderRange } from './bill';
import { fetchAllPages, type FetchOptions } from './fetch-pages';
import { picoFrom, requireUsd } from './units';

export const OPENAI_ADMIN_BASE = 'https://api.openai.com/v1';

interface Bucket<R> {
  start_time: number;
  end_time: number;
  results: R[];
}

interface CompletionsResult {
  model?: string | null;
  project_id?: string | null;
  input_tokens?: number;
  input_cached_tokens?: number;
  output_tokens?: number;
  num_model_requests?: number;
}

interface CostsResult {
  amount?: { value?: unknown; currency?: unknown };
  line_item?: string | null;
  project_id?: string | null;
}

const count = tokenCount;

function reportUrl(base: string, path: string, range: ReaderRange, groupBy: string[], limit: number): URL {
  const url = new URL(`${base.replace(/\/+$/, '')}${path}`);
  url.searchParams.set('start_time', String(Math.floor(range.from / 1000)));
  url.searchParams.set('end_time', String(Math.floor(range.to / 1000)));
  url.searchParams.set('bucket_width', '1d');
  for (const g of groupBy) url.searchParams.append('group_by', g);
  url.searchParams.set('limit', String(limit));
  return url;
}

/** The model a cost line item names ("gpt-4o-mini-2024-07-18, cached input" -> "gpt-4o-mini-2024-07-18"). */
export function modelOfLineItem(lineItem: string | null | undefined): string | null {
  if (!lineItem) return null;
  const comma = lineItem.lastIndexOf(', ');
  return comma > 0 ? lineItem.slice(0, comma) : null;
}

export async function readOpenAiBill(
  base: string,
  adminKey: string,
  range: ReaderRange,
  fetch: Omit<FetchOptions, 'headers'>,
): Promise<Bill> {
  const opts: FetchOptions = { ...fetch, headers: { authorization: `Bearer ${adminKey}` } };
  const days = Math.ceil((range.to - range.from) / DAY_MS);
  const usage = await fetchAllPages<Bucket<CompletionsResult>>(
    reportUrl(base, '/organization/usage/completions', range, ['model', 'project_id'], Math.min(31, days)),
    'OpenAI usage/completions',
    opts,
  );
  const costs = await fetchAllPages<Bucket<CostsResult>>(
    reportUrl(base, '/organization/costs', range, ['line_item', 'project_id'], Math.min(180, days)),
    'OpenAI costs',
    opts,
  );
  const dayOf = (bucket: { start_time: number }) => utcDay(bucket.start_time * 1000);
  const lines = [
    ...linesOf(usage.items, dayOf, (r: CompletionsResult, day): BillLine => {
      const cached = count(r.input_cached_tokens);
      return {
        day,
        provider: 'openai',
        model: r.model ?? null,
        scope: r.project_id ?? null,
        requests: count(r.num_model_requests),
        tokens: {
          input: count(r.input_tokens) - cached,
          cacheRead: cached,
          cacheWrite: 0,
          output: count(r.output_tokens),
        },
        costPico: null,
      };
    }),
    ...linesOf(costs.items, dayOf, (r: CostsResult, day) => {
      requireUsd(r.amount?.currency);
      return costLine(
        day,
        'openai',
        modelOfLineItem(r.line_item),
        r.project_id ?? null,
        picoFrom(r.amount?.value, 'usd'),
      );
    }),
  ];
  return {
    provider: 'openai',
    ...range,
    lines,
    pages: { 'usage/completions': usage.pages, costs: costs.pages },
  };
}
