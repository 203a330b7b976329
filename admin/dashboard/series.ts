/**
 * The answer of GET /api/usage/series (the dashboard's chart): cost and requests per UTC hour/day for a few groups,
 * "other" (the total minus those groups) and the total, without sending every group's series. Built on the reader
 * thread (admin/reads/).
 *
 * Without values: the top 8 groups by cost. A tag grouping that the rollups answer (one tag key: tag-rollup; with
 * filters on other tag keys: tag-set) is read one value at a time (each a few index seeks), so a dimension with
 * thousands of values costs no more than the few series shown.
 */
import { formatUsd } from '../../pricing/money';
import { planUsageQuery } from '../../storage/query/plan';
import {
  BUILTIN_DIMENSIONS,
  NONE,
  type Interval,
  type UsageFilter,
  type UsageGroupRow,
  type UsageQuery,
} from '../../storage/store';
import { bucketStarts } from '../query-params';

export interface SeriesParams {
  filter: UsageFilter;
  /** The one group_by dimension, if any. */
  dim?: string;
  interval: Interval;
  /** Values of `dim` to draw (validated: at most SERIES_VALUES_MAX); none: the top 8 by cost. */
  values: string[];
}

/** Series drawn when no value is asked for. */
const TOP_SERIES = 8;

type QueryUsage = (q: UsageQuery) => Promise<UsageGroupRow[]>;

export async function seriesAnswer(queryUsage: QueryUsage, { filter, dim, interval, values: asked }: SeriesParams) {
  const { first, size, count } = bucketStarts(filter, interval);
  const buckets = Array.from({ length: count }, (_, i) => first + i * size);
  const index = new Map(buckets.map((b, i) => [b, i]));
  const zeros = () => ({ cost: buckets.map(() => 0n), requests: buckets.map(() => 0) });
  const add = (into: ReturnType<typeof zeros>, r: UsageGroupRow) => {
    const i = index.get(r.bucket ?? -1);
    if (i === undefined) return;
    into.cost[i] += r.costPico;
    into.requests[i] += r.requests;
  };

  let values = asked;
  const totalRows = queryUsage({ ...filter, groupBy: [], interval });
  const series = new Map<string, ReturnType<typeof zeros>>();
  if (dim) {
    const path = planUsageQuery({ ...filter, groupBy: [dim], interval }).path;
    const oneByOne =
      values.length > 0 && (path === 'tag-rollup' || path === 'tag-set') && !BUILTIN_DIMENSIONS.includes(dim as never);
    if (oneByOne) {
      const parts = await Promise.all(
        values.map((v) => queryUsage({ ...filter, filters: { ...filter.filters, [dim]: v }, groupBy: [], interval })),
      );
      values.forEach((v, k) => {
        const s = zeros();
        for (const r of parts[k]) add(s, r);
        series.set(v, s);
      });
    } else {
      const rows = await queryUsage({ ...filter, groupBy: [dim], interval });
      const all = new Map<string, ReturnType<typeof zeros>>();
      const cost = new Map<string, bigint>();
      for (const r of rows) {
        const v = r.group[dim] ?? NONE;
        if (!all.has(v)) all.set(v, zeros());
        add(all.get(v)!, r);
        cost.set(v, (cost.get(v) ?? 0n) + r.costPico);
      }
      if (values.length === 0)
        values = [...cost.entries()]
          .sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : a[0] < b[0] ? -1 : 1))
          .slice(0, TOP_SERIES)
          .map(([v]) => v);
      for (const v of values) series.set(v, all.get(v) ?? zeros());
    }
  }
  const total = zeros();
  for (const r of await totalRows) add(total, r);
  const other = { cost: [...total.cost], requests: [...total.requests] };
  for (const s of series.values())
    s.cost.forEach((c, i) => ((other.cost[i] -= c), (other.requests[i] -= s.requests[i])));
  const json = (s: ReturnType<typeof zeros>) => ({
    cost_usd: s.cost.map((c) => formatUsd(c)),
    cost_pico: s.cost.map(String),
    requests: s.requests,
  });
  return {
    from: new Date(filter.from).toISOString(),
    to: new Date(filter.to).toISOString(),
    group_by: dim ?? null,
    interval,
    filters: filter.filters,
    buckets: buckets.map((b) => new Date(b).toISOString()),
    series: [...series.entries()].map(([group, s]) => ({ group, ...json(s) })),
    other: dim ? json(other) : null,
    total: json(total),
  };
}
