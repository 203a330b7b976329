/**
 * Which tag sets a query's tag filters select (storage/tag-sets.ts): those carrying every filter value and lacking
 * every key asked "(untagged)", found through tag_set_members (key, value, set_id).
 */
import type { SqlValue } from '../codec';
import type { SqlDialect } from '../dialect';
import { UNTAGGED } from '../store';
import { TAG_SET_MEMBERS_TABLE, TAG_SETS_TABLE } from '../tag-sets';
import type { TagFilter } from './plan';
import type { SqlQuery } from './sql';

/** Tag filters on a value, and those asking for "(untagged)". */
export function splitTagFilters(tags: TagFilter[]): { values: TagFilter[]; untagged: TagFilter[] } {
  return { values: tags.filter((t) => t.value !== UNTAGGED), untagged: tags.filter((t) => t.value === UNTAGGED) };
}

/** "Set `alias` has no member with this key": an "(untagged)" filter, one parameter (the key). */
export const lacksKey = (alias: string) =>
  `NOT EXISTS (SELECT 1 FROM ${TAG_SET_MEMBERS_TABLE} u WHERE u.set_id = ${alias} AND u.key = ?)`;

/**
 * SQL selecting `set_id` of every tag set that carries all `values` and none of the `untagged` keys, found through
 * tag_set_members (key, value, set_id); with no value, every set (tag_sets) is a candidate.
 * PostgreSQL gets the candidates as a join on the members' (set_id, key) key: the planner drives it from the
 * filter it expects to be the most selective and probes the others, where INTERSECT reads every filter's whole
 * list. SQLite keeps a join's written order, so it gets the INTERSECT, which does not depend on that order.
 */
export function matchingSets(d: SqlDialect, values: TagFilter[], untagged: TagFilter[]): SqlQuery {
  let sql: string;
  if (values.length === 0) sql = `SELECT id AS set_id FROM ${TAG_SETS_TABLE}`;
  else if (d.reordersJoins) {
    const from = values
      .map((_, i) =>
        i === 0 ? `${TAG_SET_MEMBERS_TABLE} f0` : `JOIN ${TAG_SET_MEMBERS_TABLE} f${i} ON f${i}.set_id = f0.set_id`,
      )
      .join(' ');
    sql = `SELECT f0.set_id FROM ${from} WHERE ${values.map((_, i) => `f${i}.key = ? AND f${i}.value = ?`).join(' AND ')}`;
  } else {
    sql = values
      .map(() => `SELECT set_id FROM ${TAG_SET_MEMBERS_TABLE} WHERE key = ? AND value = ?`)
      .join(' INTERSECT ');
  }
  const params: SqlValue[] = values.flatMap((t) => [t.key, t.value]);
  if (untagged.length) {
    sql = `SELECT c.set_id FROM (${sql}) c WHERE ${untagged.map(() => lacksKey('c.set_id')).join(' AND ')}`;
    params.push(...untagged.map((t) => t.key));
  }
  return { sql, params };
}

/** The number of tag sets matching a query's tag filters, counted up to `limit` (storage/query/via.ts). */
export function matchingSetCountSql(d: SqlDialect, tags: TagFilter[], limit: number): SqlQuery {
  const { values, untagged } = splitTagFilters(tags);
  const sets = matchingSets(d, values, untagged);
  return {
    sql: d.sql(`SELECT COUNT(*) AS n FROM (${sets.sql} LIMIT ?) s`),
    params: [...sets.params, limit].map(d.bind) as SqlValue[],
  };
}
