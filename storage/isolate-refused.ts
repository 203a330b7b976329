/**
 * Finds the records a store refused a batch for (storage/store-errors.ts: a constraint, an invalid value...), so
 * that the write queue can quarantine them alone (storage/quarantine.ts) and write every other record.
 */
import type { UsageRecord } from '../records/usage-record';
import { isContentError } from './store-errors';

/** What splitting a refused batch found. */
export interface Isolated {
  /** Records refused alone, with the error. */
  refused: { record: UsageRecord; err: unknown }[];
  /** Records not written because the store became unavailable (`failure`) during the split. */
  left: UsageRecord[];
  failure?: unknown;
}

/**
 * Splits a batch the store refused for its content (`err`) until each refused record is alone, writing the parts
 * it takes as it goes (`insert` throws what the store threw). When the first half is taken, the second one holds
 * what the whole was refused for: it is split at once, without writing it whole first (a record is only ever
 * called refused after it failed alone). Stops when the store becomes unavailable: what was not written yet is
 * `left`.
 */
export async function isolateRefused(
  batch: UsageRecord[],
  err: unknown,
  insert: (part: UsageRecord[]) => Promise<void>,
  found: Isolated,
): Promise<void> {
  if (batch.length === 1) {
    found.refused.push({ record: batch[0], err });
    return;
  }
  const mid = Math.ceil(batch.length / 2);
  const halves = [batch.slice(0, mid), batch.slice(mid)];
  let firstTaken = false;
  for (const [i, half] of halves.entries()) {
    if (found.failure !== undefined) {
      found.left.push(...half);
      continue;
    }
    if (i === 1 && firstTaken && half.length > 1) {
      await isolateRefused(half, err, insert, found);
      continue;
    }
    try {
      await insert(half);
      firstTaken = i === 0;
    } catch (e) {
      if (isContentError(e)) {
        await isolateRefused(half, e, insert, found);
      } else {
        found.failure = e;
        found.left.push(...half);
      }
    }
  }
}
