/**
 * Tag sets: what lets queries on two or more tag keys read a rollup (storage/query/plan.ts, path "tag-set").
 *
 * The per-tag rollups keep one tag per row, so they cannot say which features acme's requests carried
 * ("group by feature where customer_id=acme") without a join of every matching record with its tags, which takes
 * seconds at a million records. Here every distinct set of tags that records carry (all string tags of a record, sorted
 * by key; no tag at all is the empty set) gets an id in tag_sets, its members go to tag_set_members (indexed by
 * key, value), and usage_tag_set_daily keeps the usual counters per (set, UTC day) (migration 004). A query then
 * picks the sets matching its tag filters from tag_set_members, sums their daily rows and groups them by the
 * sets' member values; a set without the grouped key is "(untagged)". Every record is in exactly one set, so
 * the groups of any such query reconcile with the total, one value per tag key per request.
 *
 * With a high-cardinality tag such as a customer id most sets are distinct (the dashboard benchmark's million
 * records make about one daily row per two records), but a tag filter keeps few of them. Built-in dimensions are
 * left out of the key (each would multiply the rows: such queries stay raw), and there is no hourly table: within
 * an hour nearly every record has a set of its own.
 *
 * Each record also carries its set's id (usage_records.tag_set_id, migration 005): the raw path filters and
 * groups records by tag through their set's members, instead of one row per tag and record.
 *
 * The writer keeps the ids of recently used sets in memory (TagSetIds); a set is looked up or created in the
 * database only on a miss, in the same transaction as the records.
 */
import { BoundedCache } from '../plugin-kit/bounded-cache';
import type { UsageRecord } from '../records/usage-record';
import { NO_TAGS, memoLastFrozen, stringEntries } from './codec';

export const TAG_SETS_TABLE = 'tag_sets';
export const TAG_SET_MEMBERS_TABLE = 'tag_set_members';
/** usage_records' column holding the record's set id (migration 005). */
export const RECORD_TAG_SET_COLUMN = 'tag_set_id';

/**
 * The canonical text of a record's tag set: JSON of its [key, value] pairs sorted by key, e.g.
 * [["agent","bot"],["customer_id","acme"]]. Migration 004 builds the same text in SQL for existing records
 * (json_array in SQLite, to_json in PostgreSQL escape like JSON.stringify). Two texts for one set would only
 * split its counters over two ids, which every query sums again: a mismatch costs a row, never a wrong total.
 */
export function tagSetKey(r: UsageRecord): string {
  return canonicalText(r.tags ?? NO_TAGS);
}

const canonicalText = memoLastFrozen((tags: Readonly<Record<string, string>>): string => {
  const entries = stringEntries(tags);
  if (entries.length > 1) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify(entries);
});

/** The [key, value] pairs of a canonical text. */
export function tagSetMembers(key: string): [string, string][] {
  return JSON.parse(key) as [string, string][];
}

/**
 * Set ids the writer has seen committed, keyed by canonical text, in a BoundedCache (sets in use stay); a miss
 * costs one index lookup. Each write transaction collects the ids it found or created in a map of
 * its own (a PostgreSQL store runs several at once), remembered here only once it commits: a rolled-back set id
 * does not exist, and SQLite may hand its number to another set.
 */
export class TagSetIds {
  private readonly ids: BoundedCache<string, number>;

  constructor(generation = 20_000) {
    this.ids = new BoundedCache(generation);
  }

  get(key: string): number | undefined {
    return this.ids.get(key);
  }

  /** The ids of a transaction that committed. */
  remember(committed: ReadonlyMap<string, number>): void {
    for (const [key, id] of committed) this.ids.set(key, id);
  }

  /** The tables may have been rebuilt (a migration): no cached id can be trusted. */
  clear(): void {
    this.ids.clear();
  }
}
