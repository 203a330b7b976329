/**
 * Repricing shared by both stores: find the records whose cost changes, then let the store
 * apply each chunk in a transaction with a compare-and-set update (so a concurrent repricer
 * cannot apply the same change twice) and the rollup corrections of the rows it changed.
 */
import type { UsageRecord } from '../records/usage-record';
import { addTotals, contribution } from './counters';
import type { SqlDialect } from './dialect';
import { scanRecords } from './query/list';
import type { Exec } from './query/run';
import { RollupAccumulator } from './rollup';
import type { RepriceFn, RepriceResult, Repricing, UsageFilter } from './store';

export const REPRICE_CHUNK = 1000;

/** The fields a repricing may change (storage/store.ts Repricing); a record whose fields all stay is not rewritten. */
const REPRICED_FIELDS = [
  'costPico',
  'listCostPico',
  'provenance',
  'priceVersion',
  'usageSource',
  'priceId',
  'costDisagrees',
] as const;

/** Whether a repricing changes anything stored on the record. */
export function repricingChanges(old: UsageRecord, p: Repricing): boolean {
  return REPRICED_FIELDS.some((f) => f in p && (p[f] ?? null) !== (old[f] ?? null));
}

export interface Change {
  old: UsageRecord;
  next: UsageRecord;
}

/** Applies changes in one transaction; returns those actually updated (still had the old cost). */
export type ApplyChanges = (changes: Change[]) => Promise<Change[]>;

export async function repriceRecords(
  d: SqlDialect,
  exec: Exec,
  apply: ApplyChanges,
  fn: RepriceFn,
  filter: Partial<UsageFilter> = {},
): Promise<RepriceResult> {
  let scanned = 0;
  let updated = 0;
  for await (const records of scanRecords(d, exec, filter, REPRICE_CHUNK)) {
    scanned += records.length;
    const changes: Change[] = [];
    for (const old of records) {
      const p = fn(old);
      if (!p) continue;
      if (!repricingChanges(old, p)) continue;
      changes.push({ old, next: { ...old, ...p } });
    }
    if (changes.length) updated += (await apply(changes)).length;
  }
  return { scanned, updated };
}

/**
 * Rollup increments turning the old contributions of the changed records into the new ones; `tagSetIds[i]` is
 * the tag set of changes[i] (repricing never changes tags, so the record stays in its set).
 */
export function repriceDeltas(changes: Change[], tagSetIds: readonly number[]): RollupAccumulator {
  const acc = new RollupAccumulator();
  changes.forEach(({ old, next }, i) =>
    acc.add(next, tagSetIds[i], addTotals(contribution(next), contribution(old), -1)),
  );
  return acc;
}
