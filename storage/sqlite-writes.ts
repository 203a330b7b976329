/** The SQLite store's write transactions, prepared once the tables exist: records, repricing, quarantine. */
import type Database from 'better-sqlite3';
import type { UsageRecord } from '../records/usage-record';
import { RECORD_COLUMNS, flag, recordValues } from './codec';
import { sqliteDialect as d } from './dialect';
import { QUARANTINE_COLUMNS, quarantineValues, type QuarantinedRecord } from './quarantine';
import { repriceDeltas, type Change } from './reprice';
import { RollupAccumulator } from './rollup';
import { placeholders } from './sqlite-exec';
import { prepareRollupUpserts } from './sqlite-rollup-writes';
import { prepareTagSets } from './sqlite-tag-sets';
import { RECORD_TAG_SET_COLUMN, type TagSetIds } from './tag-sets';

export interface SqliteWrites {
  insert: Database.Transaction<(records: UsageRecord[], found: Map<string, number>) => number>;
  reprice: Database.Transaction<(changes: Change[], found: Map<string, number>) => Change[]>;
  quarantine: Database.Transaction<(entries: readonly QuarantinedRecord[]) => void>;
}

/** `cache`: the tag set ids of the connection that writes (the writer thread has its own). */
export function prepareWrites(db: Database.Database, cache: TagSetIds): SqliteWrites {
  const insertRecords = db.prepare(
    `INSERT INTO usage_records (${RECORD_COLUMNS.join(', ')}, ${RECORD_TAG_SET_COLUMN}) VALUES (${placeholders(RECORD_COLUMNS.length + 1)}) ON CONFLICT (id) DO NOTHING`,
  );
  const applyDeltas = prepareRollupUpserts(db);
  const tagSets = prepareTagSets(db, cache);
  const insert = db.transaction((records: UsageRecord[], found: Map<string, number>): number => {
    tagSets.checkSchema();
    const acc = new RollupAccumulator();
    let inserted = 0;
    for (const r of records) {
      const setId = tagSets.id(r, found);
      // changes === 0: the id is already stored (retried batch) -> no rollup increment. The values are passed as
      // arguments, not as one array: better-sqlite3 binds arguments with about half the instructions.
      if (insertRecords.run(...recordValues(r).map(d.bind), setId).changes === 0) continue;
      inserted++;
      acc.add(r, setId);
    }
    applyDeltas(acc.result());
    return inserted;
  });
  // Compare-and-set: only a record still carrying the old values is changed (and corrected in the rollups).
  const updateCost = db.prepare(
    'UPDATE usage_records SET cost_pico = ?, provenance = ?, price_version = ?, usage_source = ?, price_id = ?, cost_disagrees = ?, ' +
      'list_cost_pico = ? WHERE id = ? AND cost_pico IS ? AND provenance = ? AND price_version IS ? AND list_cost_pico IS ?',
  );
  const reprice = db.transaction((changes: Change[], found: Map<string, number>): Change[] => {
    tagSets.checkSchema();
    const done = changes.filter(
      ({ old, next }) =>
        updateCost.run(
          next.costPico,
          next.provenance,
          next.priceVersion,
          next.usageSource ?? null,
          next.priceId ?? null,
          flag(next.costDisagrees),
          next.listCostPico ?? null,
          old.id,
          old.costPico,
          old.provenance,
          old.priceVersion,
          old.listCostPico ?? null,
        ).changes === 1,
    );
    applyDeltas(
      repriceDeltas(
        done,
        done.map((c) => tagSets.id(c.old, found)),
      ).result(),
    );
    return done;
  });
  const insertQuarantined = db.prepare(
    `INSERT INTO quarantined_records (${QUARANTINE_COLUMNS}) VALUES (${placeholders(7)}) ON CONFLICT (digest) DO NOTHING`,
  );
  const quarantine = db.transaction((entries: readonly QuarantinedRecord[]): void => {
    for (const e of entries) insertQuarantined.run(...quarantineValues(e));
  });
  return { insert, reprice, quarantine };
}
