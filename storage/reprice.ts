/**
 * Repricing shared by both stores: find the records whose cost changes, then let the store
 * apply each chunk in a transaction with a compare-and-set update (so a concurrent repricer
 * cannot apply the same change twice) and the rollup corrections of the rows it changed.
 */
import { PROVIDER_REPORTED, type UsageRecord } from '../records/usage-record';
import { addTotals, contribution } from './counters';
import type { SqlDialect } from './dialect';
import { scanRecords } from './query/list';
import type { Exec } from './query/run';
import { RollupAccumulator } from './rollup';
import type { RepriceFn, RepriceResult, Repricing, UsageFilter } from './store';

export const REPRICE_CHUNK = 1000;

/**
 * The fields a repricing may change besides the price version (storage/store.ts Repricing); a record whose fields all
 * stay is not rewritten.
 */
const REPRICED_FIELDS = ['costPico', 'listCostPico', 'provenance', 'usageSource', 'priceId', 'costDisagrees'] as const;

/** A price version naming a catalog, not the provider's own figure (PROVIDER_REPORTED) and not "no price" (null). */
const catalogVersion = (v: string | null | undefined): boolean => v != null && v !== PROVIDER_REPORTED;

/**
 * Whether a repricing changes anything stored on the record, and so rewrites it. A record whose cost, list cost and
 * the rest come out the same is not rewritten when only its catalog version moves (`pricing.discounts` or a price of
 * another model changed the catalog's digest): it keeps the version its cost was computed with, which is still true
 * of it. Nothing reads that version to decide whether a record is current (a reprice always prices again from the
 * counts), so rewriting it would only cost a row write, and its WAL, for every record of the range. A move to or
 * from the provider's own figure, or from no price, is rewritten: there the version says where the cost came from.
 */
export function repricingChanges(old: UsageRecord, p: Repricing): boolean {
  if (REPRICED_FIELDS.some((f) => f in p && (p[f] ?? null) !== (old[f] ?? null))) return true;
  if (!('priceVersion' in p) || (p.priceVersion ?? null) === (old.priceVersion ?? null)) return false;
  return !(catalogVersion(old.priceVersion) && catalogVersion(p.priceVersion));
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
