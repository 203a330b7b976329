/**
 * JSON form of a usage record for the spill file: one object per line, costPico as a decimal
 * string (JSON has no bigint, and a double would round pico-USD amounts above 2^53).
 */
import type { UsageRecord } from '../core/usage';

export function recordToJson(r: UsageRecord): string {
  return JSON.stringify({ ...r, costPico: r.costPico === null ? null : r.costPico.toString() });
}

/** Parses one spill line; throws on anything that is not a record. */
export function recordFromJson(line: string): UsageRecord {
  const o = JSON.parse(line) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !Number.isSafeInteger(o.ts)) throw new Error('not a usage record');
  const cost = o.costPico;
  if (cost !== null && (typeof cost !== 'string' || !/^-?\d+$/.test(cost))) throw new Error(`record ${o.id}: bad costPico`);
  return { ...(o as unknown as UsageRecord), costPico: cost === null ? null : BigInt(cost) };
}
