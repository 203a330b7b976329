/**
 * How the big-store generator keeps the rollups exactly consistent with the records: it never computes them
 * itself. After each day's records are written, every rollup row of that day is derived from them with
 * INSERT ... SELECT ... GROUP BY, each counter summed from its own per-row SQL in storage/counters.ts (the
 * definition the raw query path uses and the writer's per-record contribution mirrors). A day's records are all
 * written before its rollups, and no later day touches them, so each rollup row is the exact sum of its records.
 * The generators derive a month at a time, after all of its records: the monthly row too is the sum of its records.
 * The same statements run on both dialects.
 */
import { COUNTERS } from '../../storage/counters';
import {
  DAILY_COUNTER_COLUMNS,
  DAILY_TABLE,
  DAY_MS,
  HOUR_MS,
  ROLLUP_DIM_COLUMNS,
  ROLLUP_TABLE,
  TAG_DAILY_TABLE,
  TAG_ROLLUP_TABLE,
  TAG_SET_DAILY_TABLE,
  TAG_SET_MONTHLY_TABLE,
  floorMonth,
} from '../../storage/rollup';

const floor = (unit: number) => `r.ts - (((r.ts % ${unit}) + ${unit}) % ${unit})`;
/** Built-in dimensions as the rollups key them: absent values as ''. */
const DIMS = [
  floor(HOUR_MS),
  ...['workspace_id', 'provider', 'model', 'served_model', 'endpoint', 'key_id'].map((c) => `COALESCE(r.${c}, '')`),
  'r.status',
];

const sum = (sql: string) => `COALESCE(SUM(${sql}), 0)`;
const hourlySums = COUNTERS.map((c) => sum(c.rawSql));
/** The daily tables' money in two columns (migration 002), each record's cost split before summing. */
const dailySums = COUNTERS.flatMap((c) =>
  c.money ? [sum(`COALESCE(${c.rawSql}, 0) >> 32`), sum(`COALESCE(${c.rawSql}, 0) & 4294967295`)] : [sum(c.rawSql)],
);
const HOURLY_COUNTERS = COUNTERS.map((c) => c.column).join(', ');
const DAILY_COUNTERS = DAILY_COUNTER_COLUMNS.join(', ');
const members = 'JOIN tag_set_members m ON m.set_id = r.tag_set_id';

/**
 * The statements deriving every rollup row of the records with from <= ts < to: whole UTC days of one UTC month,
 * holding every record of that month the store will have (the month's row is written once).
 */
export function deriveRollupsSql(from: number, to: number): string[] {
  const month = floorMonth(from);
  if (floorMonth(to - 1) !== month) throw new Error('deriveRollupsSql: the range must lie in one UTC month');
  const range = `FROM usage_records r %JOIN% WHERE r.ts >= ${from} AND r.ts < ${to}`;
  const src = (join = '') => range.replace('%JOIN%', join);
  const groups = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(', ');
  const day = floor(DAY_MS);
  return [
    `INSERT INTO ${ROLLUP_TABLE} (${ROLLUP_DIM_COLUMNS.join(', ')}, ${HOURLY_COUNTERS})
     SELECT ${DIMS.join(', ')}, ${hourlySums.join(', ')} ${src()} GROUP BY ${groups(DIMS.length)}`,
    `INSERT INTO ${TAG_ROLLUP_TABLE} (tag_key, tag_value, ${ROLLUP_DIM_COLUMNS.join(', ')}, ${HOURLY_COUNTERS})
     SELECT m.key, m.value, ${DIMS.join(', ')}, ${hourlySums.join(', ')} ${src(members)}
     GROUP BY ${groups(DIMS.length + 2)}`,
    `INSERT INTO ${DAILY_TABLE} (day, ${DAILY_COUNTERS}) SELECT ${day}, ${dailySums.join(', ')} ${src()} GROUP BY 1`,
    `INSERT INTO ${TAG_DAILY_TABLE} (tag_key, tag_value, day, ${DAILY_COUNTERS})
     SELECT m.key, m.value, ${day}, ${dailySums.join(', ')} ${src(members)} GROUP BY 1, 2, 3`,
    `INSERT INTO ${TAG_SET_DAILY_TABLE} (set_id, day, ${DAILY_COUNTERS})
     SELECT r.tag_set_id, ${day}, ${dailySums.join(', ')} ${src()} GROUP BY 1, 2`,
    `INSERT INTO ${TAG_SET_MONTHLY_TABLE} (set_id, month, ${DAILY_COUNTERS})
     SELECT r.tag_set_id, ${month}, ${dailySums.join(', ')} ${src()} GROUP BY 1`,
  ];
}
