/**
 * Rollup maintenance shared by both dialects: which rollup rows a record touches and by how much.
 *
 * usage_rollup_hourly      keyed by (hour, workspace_id, provider, model, served_model, endpoint, key_id, status)
 * usage_tag_rollup_hourly  keyed by (tag_key, tag_value) + the same dimensions, one row set per tag the record has
 * usage_rollup_daily       keyed by (day): the whole gateway per UTC day (migration 002)
 * usage_tag_rollup_daily   keyed by (tag_key, tag_value, day), no built-in dimension
 * usage_tag_set_daily      keyed by (set_id, day): the record's whole tag set (storage/tag-sets.ts, migration 004)
 * usage_tag_set_monthly    keyed by (set_id, month): the same per UTC month (migration 021)
 *
 * Absent built-in values are stored as '' (not NULL) so that the primary key / ON CONFLICT target
 * matches them on both SQLite and PostgreSQL; queries map '' back to null.
 */
import type { UsageRecord } from '../records/usage-record';
import { tagEntries } from './codec';
import {
  COUNTER_COLUMNS,
  SPLIT_COUNTER_COLUMNS,
  addTotals,
  contribution,
  totalsToArray,
  totalsToSplitArray,
  zeroTotals,
} from './counters';
import type { UsageTotals } from './store';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export const ROLLUP_DIM_COLUMNS = [
  'hour',
  'workspace_id',
  'provider',
  'model',
  'served_model',
  'endpoint',
  'key_id',
  'status',
] as const;
export const TAG_ROLLUP_DIM_COLUMNS = ['tag_key', 'tag_value', ...ROLLUP_DIM_COLUMNS] as const;

export const ROLLUP_TABLE = 'usage_rollup_hourly';
export const TAG_ROLLUP_TABLE = 'usage_tag_rollup_hourly';

/** Daily rollups (migration 002): no built-in dimension, money split as cost_pico_hi * 2^32 + cost_pico_lo. */
export const DAILY_TABLE = 'usage_rollup_daily';
export const TAG_DAILY_TABLE = 'usage_tag_rollup_daily';
export const DAILY_DIM_COLUMNS = ['day'] as const;
export const TAG_DAILY_DIM_COLUMNS = ['tag_key', 'tag_value', 'day'] as const;
/** Daily rollup per tag set (migration 004), money split like the other daily tables. */
export const TAG_SET_DAILY_TABLE = 'usage_tag_set_daily';
export const TAG_SET_DAILY_DIM_COLUMNS = ['set_id', 'day'] as const;
/** Monthly rollup per tag set (migration 021), the daily one's counters per UTC month. */
export const TAG_SET_MONTHLY_TABLE = 'usage_tag_set_monthly';
export const TAG_SET_MONTHLY_DIM_COLUMNS = ['set_id', 'month'] as const;
export const DAILY_COUNTER_COLUMNS: readonly string[] = SPLIT_COUNTER_COLUMNS;

export function floorHour(ts: number): number {
  return ts - (((ts % HOUR_MS) + HOUR_MS) % HOUR_MS);
}

export function floorDay(ts: number): number {
  return ts - (((ts % DAY_MS) + DAY_MS) % DAY_MS);
}

/** Epoch ms of the UTC month start of `ts`. */
export function floorMonth(ts: number): number {
  const d = new Date(ts);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Rollup dimension values of a record, in ROLLUP_DIM_COLUMNS order. */
export function rollupDims(r: UsageRecord): (string | number)[] {
  return [
    floorHour(r.ts),
    r.workspaceId ?? '',
    r.provider ?? '',
    r.model ?? '',
    r.servedModel ?? '',
    r.endpoint ?? '',
    r.keyId ?? '',
    r.status,
  ];
}

/** One rollup row increment: dimension values then counter values (COUNTER_COLUMNS order). */
export type RollupRow = (string | number | bigint)[];

export interface RollupDeltas {
  base: RollupRow[];
  tags: RollupRow[];
  /** Rows of the daily tables, counters in DAILY_COUNTER_COLUMNS order. */
  daily: RollupRow[];
  tagDaily: RollupRow[];
  tagSetDaily: RollupRow[];
  tagSetMonthly: RollupRow[];
}

interface Entry {
  dims: (string | number)[];
  t: UsageTotals;
}

/**
 * Accumulates increments per rollup row so each row is upserted once per batch. Records are first summed per
 * shape: everything that decides their rollup rows (hour, built-in dimensions, tag set). The records of a batch
 * come in a few shapes (one client, one model, the same tags), so the rows and their map keys (text that identifies
 * the dimension values: JSON, or ids and numbers joined) are worked out once per shape, not once per record.
 */
export class RollupAccumulator {
  private readonly shapes = new Map<string, Shape>();
  private last: Shape | undefined;

  /**
   * Adds `delta` (default: the record's own contribution) to every rollup row of the record; `tagSetId` is the
   * id of the record's tag set (storage/tag-sets.ts), which the store resolves first.
   */
  add(r: UsageRecord, tagSetId: number, delta: UsageTotals = contribution(r)): void {
    // Consecutive records often have one shape (one client, one model): compared with the last one first, they
    // need no key text.
    const last = this.last;
    if (last && last.tagSetId === tagSetId && sameShape(last.r, r)) {
      addTotals(last.t, delta);
      return;
    }
    // Two records with the same tag set id have the same string tags, hence the same tag rows. Each part is
    // preceded by its length, so no value can pass for another (a model name may hold any character).
    let shape = `${floorHour(r.ts)} ${tagSetId} ${r.status}`;
    for (const part of [r.workspaceId, r.provider, r.model, r.servedModel, r.endpoint, r.keyId]) {
      shape += part === null ? ' -' : ` ${part.length}:${part}`;
    }
    let hit = this.shapes.get(shape);
    if (hit) addTotals(hit.t, delta);
    else this.shapes.set(shape, (hit = { r, tagSetId, t: addTotals(zeroTotals(), delta) }));
    this.last = hit;
  }

  /** Rows sorted by key: concurrent transactions then lock shared rollup rows in the same order (no deadlock). */
  result(): RollupDeltas {
    const base = new Map<string, Entry>();
    const tags = new Map<string, Entry>();
    const daily = new Map<string, Entry>();
    const tagDaily = new Map<string, Entry>();
    const tagSetDaily = new Map<string, Entry>();
    const tagSetMonthly = new Map<string, Entry>();
    for (const { r, tagSetId, t } of this.shapes.values()) {
      const dims = rollupDims(r);
      const day = floorDay(r.ts);
      const dimsKey = JSON.stringify(dims);
      bump(base, dimsKey, t, () => dims);
      bump(daily, String(day), t, () => [day]);
      bump(tagSetDaily, `${tagSetId} ${day}`, t, () => [tagSetId, day]);
      const month = floorMonth(day);
      bump(tagSetMonthly, `${tagSetId} ${month}`, t, () => [tagSetId, month]);
      for (const [key, value] of tagEntries(r)) {
        // A JSON array delimits itself: kv + anything stays unambiguous.
        const kv = JSON.stringify([key, value]);
        bump(tags, kv + dimsKey, t, () => [key, value, ...dims]);
        bump(tagDaily, kv + day, t, () => [key, value, day]);
      }
    }
    return {
      base: rows(base),
      tags: rows(tags),
      daily: rows(daily, true),
      tagDaily: rows(tagDaily, true),
      tagSetDaily: rows(tagSetDaily, true),
      tagSetMonthly: rows(tagSetMonthly, true),
    };
  }
}

interface Shape {
  /** The first record of the shape. */
  r: UsageRecord;
  tagSetId: number;
  t: UsageTotals;
}

/** Same hour and built-in dimensions (what the shape's key text holds besides the tag set). */
function sameShape(a: UsageRecord, b: UsageRecord): boolean {
  return (
    floorHour(a.ts) === floorHour(b.ts) &&
    a.status === b.status &&
    a.workspaceId === b.workspaceId &&
    a.provider === b.provider &&
    a.model === b.model &&
    a.servedModel === b.servedModel &&
    a.endpoint === b.endpoint &&
    a.keyId === b.keyId
  );
}

function bump(into: Map<string, Entry>, key: string, delta: UsageTotals, dims: () => (string | number)[]): void {
  const hit = into.get(key);
  if (hit) addTotals(hit.t, delta);
  else into.set(key, { dims: dims(), t: addTotals(zeroTotals(), delta) });
}

function rows(m: Map<string, Entry>, splitMoney = false): RollupRow[] {
  return [...m.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, v]) => [...v.dims, ...(splitMoney ? totalsToSplitArray(v.t) : totalsToArray(v.t))]);
}

/**
 * Adds increments to rollup rows; `source` yields rows of (dims..., counters...) in that order
 * (a VALUES list or a SELECT over unnest). Counters may be negative (repricing corrections).
 */
export function rollupUpsertSql(
  table: string,
  dims: readonly string[],
  source: string,
  counters: readonly string[] = COUNTER_COLUMNS,
): string {
  const cols = [...dims, ...counters];
  return [
    `INSERT INTO ${table} (${cols.join(', ')})`,
    source,
    `ON CONFLICT (${dims.join(', ')}) DO UPDATE SET`,
    counters.map((c) => `  ${c} = ${table}.${c} + excluded.${c}`).join(',\n'),
  ].join('\n');
}
