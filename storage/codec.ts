/**
 * Record <-> row mapping shared by both dialects, and decoding of the integer types the drivers
 * return (better-sqlite3 with safeIntegers: bigint; pg: int8/numeric as string).
 */
import type { CostProvenance, UsageRecord, UsageSource } from '../records/usage-record';
import type { EndpointKey } from '../core/usage';

/** A value ready to bind: booleans are adapted by the dialect (SQLite has none). */
export type SqlValue = string | number | bigint | boolean | null;

/** Column order of usage_records, used for inserts and for reading rows back. */
export const RECORD_COLUMNS = [
  'id',
  'ts',
  'workspace_id',
  'key_id',
  'provider',
  'model',
  'served_model',
  'endpoint',
  'status',
  'streamed',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'reasoning_tokens',
  'citation_tokens',
  'search_queries',
  'search_context_size',
  'cost_pico',
  'provenance',
  'price_version',
  'latency_ms',
  'ttfb_ms',
  'tags',
  'error_code',
  'usage_source',
  'provider_cost_pico',
  'cost_disagrees',
  'tool_calls',
  'price_id',
  'service_tier',
  'input_audio_tokens',
  'output_audio_tokens',
  'generation_id',
  'upstream_ms',
  'list_cost_pico',
] as const;

/** The tags of a record without any (frozen: see memoLastFrozen). */
export const NO_TAGS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * `compute` with a one-entry memo for frozen objects (a frozen object's own properties cannot change, so the
 * result cannot go stale). The SQLite writer thread unpacks a batch's records with one frozen tags object per run
 * of records that share their tags (storage/packed-records.ts): their tags' texts are worked out once per run.
 */
export function memoLastFrozen<T extends object, R>(compute: (o: T) => R): (o: T) => R {
  let lastIn: T | undefined;
  let lastOut: R;
  return (o) => {
    if (o === lastIn) return lastOut;
    const out = compute(o);
    if (Object.isFrozen(o)) {
      lastIn = o;
      lastOut = out;
    }
    return out;
  };
}

/** The tags column: the record's tags as JSON text. */
const tagsJson = memoLastFrozen((tags: Readonly<Record<string, string>>) => JSON.stringify(tags));

/** Values of one record in RECORD_COLUMNS order; tags as JSON text. */
export function recordValues(r: UsageRecord): SqlValue[] {
  return [
    r.id,
    r.ts,
    r.workspaceId,
    r.keyId,
    r.provider,
    r.model,
    r.servedModel,
    r.endpoint,
    r.status,
    r.streamed,
    r.inputTokens,
    r.outputTokens,
    r.cacheReadTokens,
    r.cacheWriteTokens,
    r.cacheWrite1hTokens,
    r.reasoningTokens,
    r.citationTokens,
    r.searchQueries,
    r.searchContextSize ?? null,
    r.costPico,
    r.provenance,
    r.priceVersion,
    r.latencyMs,
    r.ttfbMs,
    tagsJson(r.tags ?? NO_TAGS),
    r.errorCode,
    // Absent on records built before migration 008 (a spill file): stored as NULL.
    r.usageSource ?? null,
    r.providerCostPico ?? null,
    flag(r.costDisagrees),
    r.toolCalls ? JSON.stringify(r.toolCalls) : null,
    r.priceId ?? null,
    // Absent on records built before migration 012: stored as NULL.
    r.serviceTier ?? null,
    r.inputAudioTokens ?? null,
    r.outputAudioTokens ?? null,
    // Absent on records built before migration 017.
    r.generationId ?? null,
    // Absent on records built before migration 019.
    r.upstreamMs ?? null,
    // Absent on records built before migration 022.
    r.listCostPico ?? null,
  ];
}

/** A nullable flag as the INTEGER column stores it (1, 0 or NULL). */
export function flag(b: boolean | null | undefined): number | null {
  return b === undefined || b === null ? null : b ? 1 : 0;
}

export function toNumber(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint' || typeof v === 'string') return Number(v);
  throw new TypeError(`expected a number, got ${typeof v}`);
}

export function toNumberOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : toNumber(v);
}

/** Exact money: never goes through a JS number. */
export function toMoney(v: unknown): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string') return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw new TypeError(`expected an exact integer amount, got ${String(v)}`);
}

export function toMoneyOrNull(v: unknown): bigint | null {
  return v === null || v === undefined ? null : toMoney(v);
}

const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** A usage_records row (either driver) back to a record. */
export function recordFromRow(row: Record<string, unknown>): UsageRecord {
  const tags =
    typeof row.tags === 'string'
      ? (JSON.parse(row.tags) as Record<string, string>)
      : ((row.tags ?? {}) as Record<string, string>);
  return {
    id: String(row.id),
    ts: toNumber(row.ts),
    workspaceId: str(row.workspace_id),
    keyId: str(row.key_id),
    provider: str(row.provider),
    model: str(row.model),
    servedModel: str(row.served_model),
    endpoint: str(row.endpoint) as EndpointKey | null,
    status: toNumber(row.status),
    // pg: boolean; SQLite: 0/1 (as bigint under safeIntegers).
    streamed: typeof row.streamed === 'boolean' ? row.streamed : toNumber(row.streamed) === 1,
    inputTokens: toNumberOrNull(row.input_tokens),
    outputTokens: toNumberOrNull(row.output_tokens),
    cacheReadTokens: toNumberOrNull(row.cache_read_tokens),
    cacheWriteTokens: toNumberOrNull(row.cache_write_tokens),
    cacheWrite1hTokens: toNumberOrNull(row.cache_write_1h_tokens),
    reasoningTokens: toNumberOrNull(row.reasoning_tokens),
    citationTokens: toNumberOrNull(row.citation_tokens),
    searchQueries: toNumberOrNull(row.search_queries),
    searchContextSize: str(row.search_context_size),
    costPico: toMoneyOrNull(row.cost_pico),
    provenance: String(row.provenance) as CostProvenance,
    priceVersion: str(row.price_version),
    latencyMs: toNumber(row.latency_ms),
    ttfbMs: toNumberOrNull(row.ttfb_ms),
    tags,
    errorCode: str(row.error_code),
    usageSource: str(row.usage_source) as UsageSource | null,
    providerCostPico: toMoneyOrNull(row.provider_cost_pico),
    costDisagrees:
      row.cost_disagrees === null || row.cost_disagrees === undefined ? null : toNumber(row.cost_disagrees) === 1,
    toolCalls: typeof row.tool_calls === 'string' ? (JSON.parse(row.tool_calls) as Record<string, number>) : null,
    priceId: str(row.price_id),
    serviceTier: str(row.service_tier),
    inputAudioTokens: toNumberOrNull(row.input_audio_tokens),
    outputAudioTokens: toNumberOrNull(row.output_audio_tokens),
    generationId: str(row.generation_id),
    upstreamMs: toNumberOrNull(row.upstream_ms),
    listCostPico: toMoneyOrNull(row.list_cost_pico),
  };
}

/** Keeps the first record of each id: a batch may repeat a record after a client-side retry. */
export function dedupeById(records: readonly UsageRecord[]): UsageRecord[] {
  const seen = new Set<string>();
  const out: UsageRecord[] = [];
  for (const r of records) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    out.push(r);
  }
  return out;
}

/** The tags that make a record's tag set (string values only): what tag filters and groupings see. */
export function tagEntries(r: UsageRecord): [string, string][] {
  return stringEntries(r.tags ?? NO_TAGS);
}

export function stringEntries(tags: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(tags).filter((e): e is [string, string] => typeof e[1] === 'string');
}
