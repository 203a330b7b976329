/**
 * OpenRouter's bill, record by record: its generation API (`GET /api/v1/generation?id=gen-…`) answers what one
 * generation cost (`total_cost`, in dollars), so each gateway record that kept its generation id (migration 017) is
 * set beside its own bill. The records are the gateway's; OpenRouter is asked only about those, one generation per
 * request, a few at a time, with the same retries and time-outs as the other readers. The key is an OpenRouter API
 * key, sent as a header of these calls only.
 */
import type { PicoUsd, UsageRecord } from '../records/usage-record';
import { formatUsd } from '../pricing/money';
import { utcDay, type BillLine } from './bill';
import { getJson, ReconcileFetchError, type FetchOptions } from './fetch-pages';
import { picoFrom } from './units';

export const OPENROUTER_API_BASE = 'https://openrouter.ai/api/v1';

/** Generations asked for at once. */
const CONCURRENCY = 4;
/** Records listed in the report's `generations.lines` (the differing and the missing ones). */
const LINES_SHOWN = 100;

/** A record the gateway kept, as the generation check needs it. */
export type RecordedGeneration = Pick<UsageRecord, 'id' | 'ts' | 'model' | 'servedModel' | 'costPico' | 'generationId'>;

export interface GenerationLine {
  record_id: string;
  generation_id: string;
  day: string;
  model: string | null;
  /** The record's cost; null when it has none (unpriced). */
  gateway_usd: string | null;
  /** OpenRouter's total_cost; null when it does not know the generation. */
  provider_usd: string | null;
}

/** What the record-by-record check found. */
export interface GenerationCheck {
  /** Records with a generation id, each looked up. */
  checked: number;
  /** Those whose cost equals OpenRouter's total_cost to the pico-dollar. */
  matched: number;
  /** Those OpenRouter charged differently. */
  differing: number;
  /** Those OpenRouter answered 404 for (not known to it, or not yet). */
  missing: number;
  /** Records of the range without a generation id (written before migration 017, or no id in the answer). */
  without_id: number;
  /** The differing and missing records, at most LINES_SHOWN. */
  lines: GenerationLine[];
}

const usdOrNull = (pico: PicoUsd | null) => (pico === null ? null : formatUsd(pico));

/** total_cost of one generation as pico-USD; null when OpenRouter does not know it (404). */
async function generationCost(base: string, id: string, opts: FetchOptions): Promise<PicoUsd | null> {
  const url = new URL(`${base.replace(/\/$/, '')}/generation`);
  url.searchParams.set('id', id);
  try {
    const body = (await getJson(url, 'generation', opts)) as { data?: { total_cost?: unknown } };
    return picoFrom(body?.data?.total_cost, 'usd');
  } catch (err) {
    if (err instanceof ReconcileFetchError && err.status === 404) return null;
    throw err;
  }
}

/** Each record's generation cost, CONCURRENCY requests at a time; the first error fails the whole read. */
async function costsOf(base: string, records: readonly RecordedGeneration[], opts: FetchOptions) {
  const costs: (PicoUsd | null)[] = new Array(records.length);
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const i = next++;
      costs[i] = await generationCost(base, records[i].generationId!, opts);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, records.length) }, worker));
  return costs;
}

/**
 * The bill of the records' generations: one line per generation (day and model as the gateway recorded them, so
 * that they merge with its own lines), and the record-by-record check.
 */
export async function readOpenRouterGenerations(
  base: string,
  apiKey: string,
  records: readonly RecordedGeneration[],
  fetch: Omit<FetchOptions, 'headers'>,
): Promise<{ lines: BillLine[]; check: GenerationCheck; pages: Record<string, number> }> {
  const withId = records.filter((r) => r.generationId);
  const costs = await costsOf(base, withId, { ...fetch, headers: { authorization: `Bearer ${apiKey}` } });
  const lines: BillLine[] = [];
  const check: GenerationCheck = {
    checked: withId.length,
    matched: 0,
    differing: 0,
    missing: 0,
    without_id: records.length - withId.length,
    lines: [],
  };
  withId.forEach((r, i) => {
    const cost = costs[i];
    const day = utcDay(r.ts);
    const model = r.servedModel ?? r.model;
    if (cost !== null)
      lines.push({ day, provider: 'openrouter', model, scope: null, requests: 1, tokens: null, costPico: cost });
    if (cost !== null && cost === r.costPico) {
      check.matched++;
      return;
    }
    if (cost === null) check.missing++;
    else check.differing++;
    if (check.lines.length < LINES_SHOWN)
      check.lines.push({
        record_id: r.id,
        generation_id: r.generationId!,
        day,
        model,
        gateway_usd: usdOrNull(r.costPico),
        provider_usd: usdOrNull(cost),
      });
  });
  return { lines, check, pages: { generation: withId.length } };
}
