/**
 * Admin API routes added for the dashboard (all behind the admin token, like every /api route):
 *   GET /api/dimensions  built-in dimensions and every tag key in the data (the group-by picker)
 *   GET /api/info        proxy URL, workspaces, whether anything was recorded yet (the empty state), and how many
 *                        records the store refused for their content and holds in quarantine (storage/quarantine.ts)
 *   GET /api/usage.csv   the grouping of GET /api/usage (same parameters) as CSV
 *   GET /api/usage/series  cost and requests per UTC hour/day for a few groups (the chart's stacks) plus
 *                          "other" (everything else) and the total, without sending every group's series
 */
import type Router from '@koa/router';
import type { WorkspaceEntry } from '../../config/schema';
import { GatewayError } from '../../core/errors';
import { formatUsd } from '../../pricing/money';
import { planUsageQuery } from '../../storage/query/plan';
import { DAY_MS, HOUR_MS } from '../../storage/rollup';
import { BUILTIN_DIMENSIONS, NONE, type UsageGroupRow, type UsageStore } from '../../storage/store';
import { filterFrom, groupByFrom, intervalFrom } from '../query-params';
import { retentionJson } from '../serialize';
import { usageCsv } from './csv';

export interface DashboardApiDeps {
  store: UsageStore;
  workspaces: readonly WorkspaceEntry[];
  /** http://host:port of the proxy listener, for the "send your first request" instructions. */
  proxyUrl?: string;
}

/** Values one GET /api/usage/series may ask for. */
export const SERIES_VALUES_MAX = 20;
/**
 * Buckets one answer may have: each is an entry of every array in it. Far beyond any range the dashboard asks
 * for (hours up to 3 days, days beyond), it stops a range of millennia by the hour from filling the heap.
 */
export const SERIES_BUCKETS_MAX = 100_000;

export function registerDashboardRoutes(router: Router, { store, workspaces, proxyUrl }: DashboardApiDeps): void {
  router.get('/dimensions', async (ctx) => {
    ctx.body = { builtin: [...BUILTIN_DIMENSIONS], tags: await store.listTagKeys() };
  });

  router.get('/info', async (ctx) => {
    // Newest record over all time: one index seek on (ts, id).
    const [latest, quarantined, keptFrom] = await Promise.all([
      store.listRequests({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1 }),
      store.countQuarantined(),
      store.recordsKeptFrom(),
    ]);
    ctx.body = {
      proxy_url: proxyUrl ?? null,
      workspaces: workspaces.map((w) => ({ id: w.id, name: w.name ?? null })),
      has_records: latest.records.length > 0,
      latest_record_at: latest.records[0] ? new Date(latest.records[0].ts).toISOString() : null,
      quarantined_records: quarantined,
      records_kept_from: keptFrom === null ? null : new Date(keptFrom).toISOString(),
    };
  });

  router.get('/usage.csv', async (ctx) => {
    const filter = filterFrom(ctx.query);
    const groupBy = groupByFrom(ctx.query);
    const interval = intervalFrom(ctx.query);
    const [rows, [total]] = await Promise.all([
      store.queryUsage({ ...filter, groupBy, interval }),
      store.queryUsage({ ...filter, groupBy: [] }),
    ]);
    const name = ['usage', ...(groupBy.length ? groupBy : ['total']), ...(interval ? [interval] : [])]
      .join('-')
      .replace(/[^A-Za-z0-9_.-]/g, '_');
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('content-disposition', `attachment; filename="${name}.csv"`);
    ctx.body = usageCsv(groupBy, rows, total, interval !== undefined);
  });

  /**
   * ?group_by=<one dimension>&value=<v>&value=<w>...&interval=hour|day (default day), with from/to/filter[...]
   * as /api/usage. One series per value asked (at most 20; a built-in's absent value is "(none)"), "other"
   * (total minus those series) and the total. Without values: the top 8 groups by cost.
   * A tag grouping that the rollups answer (one tag key: tag-rollup; with filters on other tag keys: tag-set) is
   * read one value at a time (each a few index seeks), so a dimension with thousands of values costs no more
   * than the few series shown.
   */
  router.get('/usage/series', async (ctx) => {
    const filter = filterFrom(ctx.query);
    const groupBy = groupByFrom(ctx.query);
    if (groupBy.length > 1)
      throw new GatewayError('invalid_body', 'group_by takes one dimension here', { param: 'group_by' });
    const interval = intervalFrom(ctx.query) ?? 'day';
    const raw = ctx.query.value;
    let values = (Array.isArray(raw) ? raw : raw !== undefined ? [raw] : []).slice(0, SERIES_VALUES_MAX + 1);
    if (values.length > SERIES_VALUES_MAX)
      throw new GatewayError('invalid_body', `at most ${SERIES_VALUES_MAX} values`, { param: 'value' });
    const dim = groupBy[0];
    const size = interval === 'hour' ? HOUR_MS : DAY_MS;
    const first = Math.floor(filter.from / size) * size;
    if (Math.ceil((filter.to - first) / size) > SERIES_BUCKETS_MAX) {
      throw new GatewayError(
        'invalid_body',
        `from..to holds more than ${SERIES_BUCKETS_MAX} ${interval} buckets: shorten the range or use a longer interval`,
        { param: 'from' },
      );
    }
    const buckets: number[] = [];
    for (let b = first; b < filter.to; b += size) buckets.push(b);
    const index = new Map(buckets.map((b, i) => [b, i]));
    const zeros = () => ({ cost: buckets.map(() => 0n), requests: buckets.map(() => 0) });
    const add = (into: ReturnType<typeof zeros>, r: UsageGroupRow, sign = 1) => {
      const i = index.get(r.bucket ?? -1);
      if (i === undefined) return;
      into.cost[i] += sign === 1 ? r.costPico : -r.costPico;
      into.requests[i] += sign * r.requests;
    };

    const totalRows = store.queryUsage({ ...filter, groupBy: [], interval });
    const series = new Map<string, ReturnType<typeof zeros>>();
    if (dim) {
      const path = planUsageQuery({ ...filter, groupBy: [dim], interval }).path;
      const oneByOne =
        values.length > 0 &&
        (path === 'tag-rollup' || path === 'tag-set') &&
        !BUILTIN_DIMENSIONS.includes(dim as never);
      if (oneByOne) {
        const parts = await Promise.all(
          values.map((v) =>
            store.queryUsage({ ...filter, filters: { ...filter.filters, [dim]: v }, groupBy: [], interval }),
          ),
        );
        values.forEach((v, k) => {
          const s = zeros();
          for (const r of parts[k]) add(s, r);
          series.set(v, s);
        });
      } else {
        const rows = await store.queryUsage({ ...filter, groupBy: [dim], interval });
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
            .slice(0, 8)
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
    ctx.body = {
      from: new Date(filter.from).toISOString(),
      to: new Date(filter.to).toISOString(),
      group_by: dim ?? null,
      interval,
      filters: filter.filters,
      buckets: buckets.map((b) => new Date(b).toISOString()),
      series: [...series.entries()].map(([group, s]) => ({ group, ...json(s) })),
      other: dim ? json(other) : null,
      total: json(total),
      // A series read one value at a time takes the same path as the grouping.
      ...(await retentionJson(store, [
        { ...filter, groupBy: [], interval },
        { ...filter, groupBy: dim ? [dim] : [], interval },
      ])),
    };
  });
}
