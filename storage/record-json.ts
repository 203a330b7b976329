/**
 * JSON form of a usage record for the spill file: one object per line, costPico, listCostPico and providerCostPico as
 * decimal strings (JSON has no bigint, and a double would round pico-USD amounts above 2^53).
 */
import { truncate } from '../core/truncate';
import type { UsageRecord } from '../records/usage-record';

const money = (v: bigint | null | undefined): string | null | undefined => (typeof v === 'bigint' ? v.toString() : v);

export function recordToJson(r: UsageRecord): string {
  return JSON.stringify({
    ...r,
    costPico: money(r.costPico),
    listCostPico: money(r.listCostPico),
    providerCostPico: money(r.providerCostPico),
  });
}

/** An amount read back: null, absent (a record spilled before migration 008 or 022) or a decimal integer string. */
function moneyFrom(o: Record<string, unknown>, field: string): bigint | null | undefined {
  const v = o[field];
  if (v === null || v === undefined) return v;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v))
    throw new Error(`record ${truncate(String(o.id), 100)}: ${field} is not a decimal integer`);
  return BigInt(v);
}

const TEXT_FIELDS = [
  'workspaceId',
  'keyId',
  'provider',
  'model',
  'servedModel',
  'endpoint',
  'searchContextSize',
  'provenance',
  'priceVersion',
  'errorCode',
  'serviceTier',
  'generationId',
] as const;
const NUMBER_FIELDS = [
  'status',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'cacheWrite1hTokens',
  'reasoningTokens',
  'citationTokens',
  'searchQueries',
  'latencyMs',
  'ttfbMs',
  'upstreamMs',
  'inputAudioTokens',
  'outputAudioTokens',
] as const;

/**
 * Parses one spill line; throws on anything that is not a record. A field of the wrong JSON type (an object where a
 * text belongs, a boolean where a number does: a hand-edited or corrupted file) is refused here, since the drivers
 * would throw on it without a database error code. Values of the right type go to the store, which decides (a
 * fractional token count, a null status: refused for their content, and quarantined).
 */
export function recordFromJson(line: string): UsageRecord {
  const o = JSON.parse(line) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !Number.isSafeInteger(o.ts))
    throw new Error('not a usage record');
  const bad = (field: string, what: string) =>
    new Error(`record ${truncate(o.id as string, 100)}: ${field} is not ${what}`);
  for (const f of TEXT_FIELDS) if (o[f] != null && typeof o[f] !== 'string') throw bad(f, 'a text');
  for (const f of NUMBER_FIELDS) if (o[f] != null && typeof o[f] !== 'number') throw bad(f, 'a number');
  if (o.streamed != null && typeof o.streamed !== 'boolean') throw bad('streamed', 'true or false');
  if (o.tags != null && (typeof o.tags !== 'object' || Array.isArray(o.tags))) throw bad('tags', 'an object');
  if (o.costPico === undefined) throw bad('costPico', 'a decimal integer');
  const out = { ...(o as unknown as UsageRecord), costPico: moneyFrom(o, 'costPico') as bigint | null };
  for (const f of ['providerCostPico', 'listCostPico'] as const) {
    const v = moneyFrom(o, f);
    if (v !== undefined) out[f] = v;
  }
  return out;
}
