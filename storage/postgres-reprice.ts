/** The PostgreSQL store's side of a repricing (storage/reprice.ts): the compare-and-set update of one chunk. */
import type { PoolClient } from 'pg';
import { flag, type SqlValue } from './codec';
import { columns } from './postgres-column-arrays';
import type { Change } from './reprice';

// Compare-and-set: only records still carrying the old values change (and are corrected in the rollups). Found by
// their primary key (id, ts): the ts also picks the month partition (migration 007).
const REPRICE = `UPDATE usage_records u
SET cost_pico = v.cost_pico, provenance = v.provenance, price_version = v.price_version,
  usage_source = v.usage_source, price_id = v.price_id, cost_disagrees = v.cost_disagrees,
  list_cost_pico = v.list_cost_pico
FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::int8[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int4[], $12::int8[], $13::int8[])
  AS v (id, ts, cost_pico, provenance, price_version, old_cost_pico, old_provenance, old_price_version, usage_source, price_id, cost_disagrees, list_cost_pico, old_list_cost_pico)
WHERE u.id = v.id AND u.ts = v.ts
  AND u.cost_pico IS NOT DISTINCT FROM v.old_cost_pico
  AND u.list_cost_pico IS NOT DISTINCT FROM v.old_list_cost_pico
  AND u.provenance = v.old_provenance
  AND u.price_version IS NOT DISTINCT FROM v.old_price_version
RETURNING u.id`;

/** Applies the changes in transaction `c`; returns those it made (the records that still had the old values). */
export async function updateCosts(c: PoolClient, changes: Change[]): Promise<Change[]> {
  const rows = changes.map(({ old, next }): SqlValue[] => [
    old.id,
    old.ts,
    next.costPico,
    next.provenance,
    next.priceVersion,
    old.costPico,
    old.provenance,
    old.priceVersion,
    next.usageSource ?? null,
    next.priceId ?? null,
    flag(next.costDisagrees),
    next.listCostPico ?? null,
    old.listCostPico ?? null,
  ]);
  const res = await c.query<{ id: string }>(REPRICE, columns(rows, 13));
  const updated = new Set(res.rows.map((r) => r.id));
  return changes.filter((ch) => updated.has(ch.old.id));
}
