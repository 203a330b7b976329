/**
 * OpenRouter's bill, record by record: its generation API (`GET /api/v1/generation?id=gen-…`) answers what one
 * generation cost (`total_cost`, in dollars), so each gateway record that kept its generation id (migration 017) is
 * set beside its own bill. The records are the gateway's; OpenRouter is asked only about those, one generation per
 * request, a few at a time, with the same retries and time-outs as the other readers. The key is an OpenRouter API
 * key, sent as a header of these calls only.
 */
import type { PicoUsd } from '../records/usage-record';
import type { RecordedGeneration } from './recorded-generation';
import { formatUsd } from '../pricing/money';
import { utcDay, type BillLine } from './bill';
import { getJson, ReconcileFetchError, type FetchOptions } from './fetch-pages';
import { billTokensOf, generationTokens, recordTokens, sameTokens, type GenerationTokens } from './generation-tokens';
import { picoFrom } from './units';

export const OPENROUTER_API_BASE = 'https://openrouter.ai/api/v1';

/** Generations asked for at once. */
const CONCURRENCY = 4;
/** Records listed in the report's `generations.lines` (those not matched). */
const LINES_SHOWN = 100;

/**
 * Why a record is listed: OpenRouter charged another cost, counted other tokens, both, or does not know the
 * generation (404).
 */
export type GenerationStatus = 'cost_differs' | 'tokens_differ' | 'cost_and_tokens_differ' | 'missing';

export interface GenerationLine {
  record_id: string;
  generation_id: string;
  day: string;
  model: string | null;
  /** The record's cost; null when it has none (unpriced). */
  gateway_usd: string | null;
  /** OpenRouter's total_cost; null when it does not know the generation. */
  provider_usd: string | null;
  status: GenerationStatus;
  /** The record's tokens as the provider counts them (prompt with its cached reads and cache writes). */
  gateway_tokens: GenerationTokens;
  /** The generation's native counts; null when OpenRouter does not know it or gives none. */
  provider_tokens: GenerationTokens | null;
}

/** What the record-by-record check found. */
export interface GenerationCheck {
  /** Records with a generation id, each looked up. */
  checked: number;
  /** Those whose cost equals OpenRouter's total_cost to the pico-dollar and whose tokens equal its native counts. */
  matched: number;
  /** Those OpenRouter charged differently. */
  differing: number;
  /** Those whose tokens differ from the generation's native counts (whatever their cost). */
  tokens_differing: number;
  /** Those OpenRouter answered 404 for (not known to it, or not yet). */
  missing: number;
  /** Records of the range without a generation id (written before migration 017, or no id in the answer). */
  without_id: number;
  /** The records not matched, at most LINES_SHOWN. */
  lines: GenerationLine[];
}

const usdOrNull = (pico: PicoUsd | null) => (pico === null ? null : formatUsd(pico));

/** What OpenRouter billed for one generation. */
interface Billed {
  costPico: PicoUsd;
  tokens: GenerationTokens | null;
}

/** total_cost of one generation as pico-USD and its native token counts; null when OpenRouter does not know it (404). */
async function generationBilled(base: string, id: string, opts: FetchOptions): Promise<Billed | null> {
  const url = new URL(`${base.replace(/\/$/, '')}/generation`);
  url.searchParams.set('id', id);
  try {
    const body = (await getJson(url, 'generation', opts)) as { data?: Record<string, unknown> };
    return { costPico: picoFrom(body?.data?.total_cost, 'usd'), tokens: generationTokens(body?.data) };
  } catch (err) {
    if (err instanceof ReconcileFetchError && err.status === 404) return null;
    throw err;
  }
}

/** Each record's generation bill, CONCURRENCY requests at a time; the first error fails the whole read. */
async function billedOf(base: string, records: readonly RecordedGeneration[], opts: FetchOptions) {
  const costs: (Billed | null)[] = new Array(records.length);
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const i = next++;
      costs[i] = await generationBilled(base, records[i].generationId!, opts);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, records.length) }, worker));
  return costs;
}

/** Why a record is listed, or null when its cost and tokens both agree with its generation's. */
function statusOf(r: RecordedGeneration, billed: Billed | null, tokens: GenerationTokens): GenerationStatus | null {
  if (billed === null) return 'missing';
  const costDiffers = billed.costPico !== r.costPico;
  const tokensDiffer = billed.tokens !== null && !sameTokens(tokens, billed.tokens);
  if (costDiffers && tokensDiffer) return 'cost_and_tokens_differ';
  return costDiffers ? 'cost_differs' : tokensDiffer ? 'tokens_differ' : null;
}

/** Counts one record's status into the check, and lists it when it is not matched. */
function tally(check: GenerationCheck, line: GenerationLine | null): void {
  if (line === null) {
    check.matched++;
    return;
  }
  if (line.status === 'missing') check.missing++;
  if (line.status === 'cost_differs' || line.status === 'cost_and_tokens_differ') check.differing++;
  if (line.status === 'tokens_differ' || line.status === 'cost_and_tokens_differ') check.tokens_differing++;
  if (check.lines.length < LINES_SHOWN) check.lines.push(line);
}

/**
 * The bill of the records' generations: one line per generation (day and model as the gateway recorded them, so
 * that they merge with its own lines, with the generation's native tokens), and the record-by-record check.
 */
export async function readOpenRouterGenerations(
  base: string,
  apiKey: string,
  records: readonly RecordedGeneration[],
  fetch: Omit<FetchOptions, 'headers'>,
): Promise<{ lines: BillLine[]; check: GenerationCheck; pages: Record<string, number> }> {
  const withId = records.filter((r) => r.generationId);
  const billed = await billedOf(base, withId, { ...fetch, headers: { authorization: `Bearer ${apiKey}` } });
  const lines: BillLine[] = [];
  const check: GenerationCheck = {
    checked: withId.length,
    matched: 0,
    differing: 0,
    tokens_differing: 0,
    missing: 0,
    without_id: records.length - withId.length,
    lines: [],
  };
  withId.forEach((r, i) => {
    const bill = billed[i];
    const day = utcDay(r.ts);
    const model = r.servedModel ?? r.model;
    const tokens = bill?.tokens ?? null;
    if (bill !== null)
      lines.push({
        day,
        provider: 'openrouter',
        model,
        scope: null,
        requests: 1,
        tokens: tokens && billTokensOf(tokens),
        costPico: bill.costPico,
      });
    const gatewayTokens = recordTokens(r);
    const status = statusOf(r, bill, gatewayTokens);
    tally(
      check,
      status && {
        record_id: r.id,
        generation_id: r.generationId!,
        day,
        model,
        gateway_usd: usdOrNull(r.costPico),
        provider_usd: usdOrNull(bill?.costPico ?? null),
        status,
        gateway_tokens: gatewayTokens,
        provider_tokens: tokens,
      },
    );
  });
  return { lines, check, pages: { generation: withId.length } };
}
