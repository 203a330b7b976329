/**
 * JSON form of a usage record for the spill file: one object per line, costPico and providerCostPico as decimal
 * strings (JSON has no bigint, and a double would round pico-USD amounts above 2^53).
 */
import type { UsageRecord } from '../core/usage';

const money = (v: bigint | null | undefined): string | null | undefined => (typeof v === 'bigint' ? v.toString() : v);

export function recordToJson(r: UsageRecord): string {
  return JSON.stringify({ ...r, costPico: money(r.costPico), providerCostPico: money(r.providerCostPico) });
}

/** An amount read back: null, absent (a record spilled before migration 008) or a decimal integer string. */
function moneyFrom(o: Record<string, unknown>, field: string): bigint | null | undefined {
  const v = o[field];
  if (v === null || v === undefined) return v;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new Error(`record ${String(o.id)}: bad ${field}`);
  return BigInt(v);
}

/** Parses one spill line; throws on anything that is not a record. */
export function recordFromJson(line: string): UsageRecord {
  const o = JSON.parse(line) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !Number.isSafeInteger(o.ts)) throw new Error('not a usage record');
  if (o.costPico === undefined) throw new Error(`record ${o.id}: bad costPico`);
  const out = { ...(o as unknown as UsageRecord), costPico: moneyFrom(o, 'costPico') as bigint | null };
  const provider = moneyFrom(o, 'providerCostPico');
  if (provider !== undefined) out.providerCostPico = provider;
  return out;
}
