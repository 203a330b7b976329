/**
 * One reconciliation run: the provider's bill fetched (or read from a CSV export), the gateway's usage of the same
 * days read, the two matched, and the run stored with what it fetched, whether or not it succeeded. The admin key
 * is a parameter of this call only: it is passed to the reader's requests and kept nowhere else.
 */
import type { ReconcileConfig } from '../config/reconcile';
import type { ListRequestsQuery, UsageGroupRow, UsageQuery } from '../storage/store';
import type { ReconciliationRuns } from '../storage/reconciliation-runs';
import { readAnthropicBill } from './anthropic-reader';
import { DAY_MS, mergeBillLines, utcDay, type Bill, type ReaderRange } from './bill';
import { readCsvExport } from './csv-export';
import { DEFAULT_FETCH, type FetchOptions } from './fetch-pages';
import { gatewayLines, gatewayQuery } from './gateway-lines';
import { matchBill } from './match';
import { readOpenAiBill } from './openai-reader';
import { readOpenRouterGenerations } from './openrouter-generations';
import type { GenerationPage, RecordedGeneration } from './recorded-generation';
import type { ReconciliationReport } from './report';

export type BillSource =
  | { kind: 'openai' | 'anthropic' | 'openrouter'; baseUrl: string; adminKey: string }
  | { kind: 'csv'; name: string; text: string };

export interface RunSettings {
  /** The gateway's provider slug (its records' provider). */
  provider: string;
  tolerance: string;
  /** Days before `now` the provider may still restate: their differences are not final. */
  restateDays: number;
  scopes: Readonly<Record<string, string>>;
  fetch?: Partial<Omit<FetchOptions, 'headers'>>;
}

export interface RunDeps {
  queryUsage(q: UsageQuery): Promise<UsageGroupRow[]>;
  /** The gateway's records, for a bill read record by record (OpenRouter's generations). */
  listRequests?(q: ListRequestsQuery): Promise<GenerationPage>;
  runs?: ReconciliationRuns;
  now?: () => number;
}

export interface RunOutcome {
  id: number | null;
  report: ReconciliationReport | null;
  error: string | null;
  pages: Record<string, number>;
}

/** The settings of a run of `provider` from the reconcile config. */
export function runSettings(c: ReconcileConfig, provider: string): RunSettings {
  return {
    provider,
    tolerance: c.tolerance,
    restateDays: c.restate_days,
    scopes: c.providers[provider]?.scopes ?? {},
  };
}

/** [from, to) widened to whole UTC days. */
export function wholeDays(range: ReaderRange): ReaderRange {
  return { from: Math.floor(range.from / DAY_MS) * DAY_MS, to: Math.ceil(range.to / DAY_MS) * DAY_MS };
}

/** Records a run reads one by one at most: each is a request to the provider. */
export const MAX_RECORDS_PER_RUN = 20_000;

/** Every record of `provider` in the range, newest first, page by page. */
async function recordsOf(deps: RunDeps, provider: string, range: ReaderRange): Promise<RecordedGeneration[]> {
  if (!deps.listRequests) throw new Error(`${provider} is reconciled record by record: run tollgate reconcile`);
  const out: RecordedGeneration[] = [];
  let cursor: string | null = null;
  do {
    const page = await deps.listRequests({ ...range, filters: { provider }, limit: 1000, cursor });
    for (const r of page.records) out.push(r);
    if (out.length > MAX_RECORDS_PER_RUN)
      throw new Error(
        `more than ${MAX_RECORDS_PER_RUN} ${provider} records in the range, each a request to ${provider}: reconcile fewer days at a time`,
      );
    cursor = page.nextCursor;
  } while (cursor !== null);
  return out;
}

async function fetchBill(deps: RunDeps, source: BillSource, range: ReaderRange, s: RunSettings): Promise<Bill> {
  const fetch = { ...DEFAULT_FETCH, ...s.fetch };
  const provider = s.provider;
  if (source.kind === 'csv')
    return { provider, ...range, lines: readCsvExport(source.text, provider), pages: { csv: 1 } };
  if (source.kind === 'openrouter') {
    const records = await recordsOf(deps, provider, range);
    const read = await readOpenRouterGenerations(source.baseUrl, source.adminKey, records, fetch);
    return { provider, ...range, lines: read.lines, pages: read.pages, generations: read.check };
  }
  const read = source.kind === 'openai' ? readOpenAiBill : readAnthropicBill;
  return read(source.baseUrl, source.adminKey, range, fetch);
}

export async function runReconciliation(
  deps: RunDeps,
  source: BillSource,
  asked: ReaderRange,
  settings: RunSettings,
): Promise<RunOutcome> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const range = wholeDays(asked);
  const [fromDay, toDay] = [utcDay(range.from), utcDay(range.to)];
  let outcome: RunOutcome;
  try {
    const bill = await fetchBill(deps, source, range, settings);
    const lines = mergeBillLines(bill.lines.map((l) => ({ ...l, provider: settings.provider }))).filter(
      (l) => l.day >= fromDay && l.day < toDay,
    );
    const mapped = new Set(Object.values(settings.scopes));
    const rows = await deps.queryUsage(gatewayQuery(settings.provider, range, mapped.size > 0));
    const report = matchBill(gatewayLines(rows, mapped), lines, {
      provider: settings.provider,
      from: fromDay,
      to: toDay,
      tolerance: settings.tolerance,
      notFinalFrom: utcDay(startedAt - settings.restateDays * DAY_MS),
      scopes: settings.scopes,
    });
    if (bill.generations) report.generations = bill.generations;
    outcome = { id: null, report, error: null, pages: bill.pages };
  } catch (err) {
    outcome = { id: null, report: null, error: (err as Error).message, pages: {} };
  }
  if (deps.runs)
    outcome.id = await deps.runs.insert({
      provider: settings.provider,
      rangeFrom: range.from,
      rangeTo: range.to,
      startedAt,
      finishedAt: now(),
      source: source.kind === 'csv' ? `csv:${source.name}` : 'api',
      status: outcome.report ? 'ok' : 'failed',
      error: outcome.error,
      drift: outcome.report?.totals.drift ?? null,
      pages: outcome.pages,
      report: outcome.report && JSON.stringify(outcome.report),
    });
  return outcome;
}
