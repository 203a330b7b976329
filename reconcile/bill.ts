/**
 * A provider's bill as the readers hand it over: one line per UTC day x model x scope (project, workspace or API
 * key where the provider groups by it), with the tokens it counted and what it charged, in pico-USD. Every reader
 * (OpenAI, Anthropic, a console CSV) produces this one shape, so matching never sees a provider's own units.
 */
import type { PicoUsd } from '../records/usage-record';
import type { GenerationCheck } from './openrouter-generations';

export interface BillTokens {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
}

export interface BillLine {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  provider: string;
  /** The model as the provider names it; null for charges no model carries (a tax, a fee, a whole-day total). */
  model: string | null;
  /** The provider's project, workspace or API key id; null when the bill does not break the day down by it. */
  scope: string | null;
  /** Requests the provider counted; null when its report has no count. */
  requests: number | null;
  /** Tokens the provider counted; null when only the cost is known (a cost report line, a CSV without tokens). */
  tokens: BillTokens | null;
  /** What the provider charged; null when it reported usage but no cost for the line. */
  costPico: PicoUsd | null;
}

/** What one reader fetched for one run. */
export interface Bill {
  provider: string;
  /** [from, to) in epoch ms, whole UTC days. */
  from: number;
  to: number;
  lines: BillLine[];
  /** Pages read per endpoint (for the run's record of what it fetched). */
  pages: Record<string, number>;
  /** A bill read record by record (OpenRouter): what each record's own bill said. */
  generations?: GenerationCheck;
}

export const DAY_MS = 24 * 3600 * 1000;

/** Whole UTC days: [from, to) in epoch ms. */
export interface ReaderRange {
  from: number;
  to: number;
}

/** A token count from a provider's report; anything that is not a non-negative number counts as none. */
export const tokenCount = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

/** The UTC day of an instant, YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function addTokens(a: BillTokens | null, b: BillTokens | null): BillTokens | null {
  if (a === null) return b && { ...b };
  if (b === null) return a;
  return {
    input: a.input + b.input,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    output: a.output + b.output,
  };
}

function addCount(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : a + b;
}

function addCost(a: bigint | null, b: bigint | null): bigint | null {
  return a === null ? b : b === null ? a : a + b;
}

/** Lines summed per day x model x scope: a usage report and a cost report of the same day become one line. */
export function mergeBillLines(lines: readonly BillLine[]): BillLine[] {
  const merged = new Map<string, BillLine>();
  for (const line of lines) {
    const key = JSON.stringify([line.day, line.provider, line.model, line.scope]);
    const seen = merged.get(key);
    if (!seen) {
      merged.set(key, { ...line, tokens: line.tokens && { ...line.tokens } });
      continue;
    }
    seen.requests = addCount(seen.requests, line.requests);
    seen.tokens = addTokens(seen.tokens, line.tokens);
    seen.costPico = addCost(seen.costPico, line.costPico);
  }
  return [...merged.values()].sort((a, b) =>
    (a.day + (a.model ?? '') + (a.scope ?? '')).localeCompare(b.day + (b.model ?? '') + (b.scope ?? '')),
  );
}

/** Every result of every daily bucket as a bill line; `dayOf` reads the provider's bucket start. */
export function linesOf<B extends { results?: R[] }, R>(
  buckets: readonly B[],
  dayOf: (bucket: B) => string,
  toLine: (result: R, day: string) => BillLine,
): BillLine[] {
  return buckets.flatMap((bucket) => (bucket.results ?? []).map((r) => toLine(r, dayOf(bucket))));
}

/** A cost report's line: what was charged, with no usage beside it. */
export function costLine(
  day: string,
  provider: string,
  model: string | null,
  scope: string | null,
  costPico: PicoUsd,
): BillLine {
  return { day, provider, model, scope, requests: null, tokens: null, costPico };
}
