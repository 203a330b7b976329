/**
 * The answer of GET /api/latency (the dashboard's latency and errors view), built on the reader thread.
 *
 * Requests and errors (per status, per provider and model, per bucket) are exact, read from the rollups like every
 * usage total. Percentiles (latency, time to first byte, and the gateway's overhead: latency less the provider's time
 * kept in upstream_ms) need each request's times, which only the per-request records hold. They come from a sample
 * of at most LATENCY_SAMPLE_MAX records spread over the range: the range is cut into strata (one per bucket, at most
 * STRATA_MAX of neighbouring buckets), and the newest records of each stratum are read by the (ts, id) index, so a
 * range of a million records costs the same bounded read as one of twenty thousand, and every bucket of the chart
 * has its own. A range-wide percentile weighs each sampled record by its stratum's requests over its sampled ones
 * (exact counts from the rollups), so a busy day counts for its traffic. Error codes come from the same sample.
 */
import type { UsageRecord } from '../../records/usage-record';
import { NONE, type Interval, type RequestPage, type ListRequestsQuery, type UsageFilter } from '../../storage/store';
import type { UsageGroupRow, UsageQuery } from '../../storage/store';
import { bucketStarts } from '../query-params';

/** Records one answer reads for its percentiles and error codes (spread over the range). */
export const LATENCY_SAMPLE_MAX = 20_000;
/** Parts of the range sampled apart; more buckets than this are grouped, neighbours together. */
const STRATA_MAX = 500;
/** Strata read at once (PostgreSQL runs them on its pool; SQLite's reads are quick index seeks). */
const STRATA_AT_ONCE = 8;
/** Provider and model pairs one answer describes (the busiest); the rest are counted in `models_other`. */
const MODELS_MAX = 20;
const PAGE = 1000;

export interface LatencyParams {
  filter: UsageFilter;
  interval: Interval;
}

interface Sources {
  queryUsage(q: UsageQuery): Promise<UsageGroupRow[]>;
  listPage(q: ListRequestsQuery): Promise<RequestPage>;
}

/** A sampled time and how many requests of the range it stands for. */
interface Weighted {
  v: number;
  w: number;
}

/** The nearest-rank percentile of values sorted by `v`, each counted `w` times; null for none. */
function percentile(sorted: Weighted[], total: number, p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = (p / 100) * total * (1 - 1e-12); // the float sum of weights may fall a hair short of an exact rank
  let seen = 0;
  for (const x of sorted) {
    seen += x.w;
    if (seen >= rank) return x.v;
  }
  return sorted[sorted.length - 1].v;
}

/** p50 and p95 of some weighted values (sorted here). */
function quantiles(values: Weighted[]): { p50: number | null; p95: number | null } {
  const sorted = [...values].sort((a, b) => a.v - b.v);
  const total = sorted.reduce((sum, x) => sum + x.w, 0);
  return { p50: percentile(sorted, total, 50), p95: percentile(sorted, total, 95) };
}

/** The newest `max` records of the filter's range, a page at a time. */
async function readNewest(listPage: Sources['listPage'], filter: UsageFilter, max: number) {
  const records: UsageRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await listPage({ ...filter, limit: Math.min(PAGE, max - records.length), cursor });
    records.push(...page.records);
    cursor = page.nextCursor;
  } while (cursor && records.length < max);
  return { records, complete: cursor === null };
}

interface Buckets {
  first: number;
  size: number;
  count: number;
}

/** The range cut into strata of whole buckets (the first and last clipped to the range). */
function strataOf(filter: UsageFilter, { first, size, count }: Buckets): UsageFilter[] {
  const strata = Math.min(count, STRATA_MAX);
  const edge = (j: number) => first + Math.floor((j * count) / strata) * size;
  return Array.from({ length: strata }, (_, j) => ({
    ...filter,
    from: Math.max(filter.from, edge(j)),
    to: Math.min(filter.to, edge(j + 1)),
  }));
}

/**
 * The sample: the newest records of each stratum, each with its weight (the stratum's requests, from the rollups,
 * over the records sampled from it; 1 where the stratum is read whole).
 */
async function readSample(listPage: Sources['listPage'], filter: UsageFilter, buckets: Buckets, perBucket: number[]) {
  const strata = strataOf(filter, buckets);
  const perStratum = Math.ceil(LATENCY_SAMPLE_MAX / strata.length);
  const parts: { records: UsageRecord[]; complete: boolean }[] = [];
  for (let i = 0; i < strata.length; i += STRATA_AT_ONCE)
    parts.push(
      ...(await Promise.all(strata.slice(i, i + STRATA_AT_ONCE).map((f) => readNewest(listPage, f, perStratum)))),
    );
  const weights = new Map<UsageRecord, number>();
  parts.forEach(({ records, complete }, j) => {
    if (records.length === 0) return;
    const first = Math.floor((strata[j].from - buckets.first) / buckets.size);
    const last = Math.ceil((strata[j].to - buckets.first) / buckets.size);
    const requests = perBucket.slice(first, last).reduce((a, b) => a + b, 0);
    const w = complete ? 1 : Math.max(1, requests / records.length);
    for (const r of records) weights.set(r, w);
  });
  return { records: parts.flatMap((part) => part.records), complete: parts.every((part) => part.complete), weights };
}

const modelKey = (provider: string | null, model: string | null) => JSON.stringify([provider ?? NONE, model ?? NONE]);

/**
 * The gateway's overhead of a record: its latency less the provider's time (sending upstream to the answer's last
 * byte); null where the provider's time is unknown (nothing sent upstream, or a record from before it was kept).
 */
const overheadOf = (r: UsageRecord): number | null =>
  r.upstreamMs === null || r.upstreamMs === undefined ? null : Math.max(0, r.latencyMs - r.upstreamMs);

const TIMES = {
  latency: (r: UsageRecord) => r.latencyMs,
  ttfb: (r: UsageRecord) => r.ttfbMs,
  overhead: overheadOf,
};
type Times = Record<keyof typeof TIMES, Weighted[]>;
const noTimes = (): Times => ({ latency: [], ttfb: [], overhead: [] });

function addTimes(into: Times, r: UsageRecord, w: number): void {
  for (const [name, of] of Object.entries(TIMES) as [keyof Times, (r: UsageRecord) => number | null][]) {
    const v = of(r);
    if (v !== null) into[name].push({ v, w });
  }
}

/** Latency, time-to-first-byte and overhead percentiles over the range and per bucket, for one provider and model. */
function timings(
  records: UsageRecord[],
  weights: Map<UsageRecord, number>,
  bucketOf: (ts: number) => number,
  count: number,
) {
  const perBucket = Array.from({ length: count }, noTimes);
  const all = noTimes();
  for (const r of records) {
    const w = weights.get(r) ?? 1;
    addTimes(perBucket[bucketOf(r.ts)], r, w);
    addTimes(all, r, w);
  }
  const q = perBucket.map((b) => ({
    latency: quantiles(b.latency),
    ttfb: quantiles(b.ttfb),
    overhead: quantiles(b.overhead),
  }));
  return {
    sampled: records.length,
    timed: all.overhead.length,
    latency_ms: quantiles(all.latency),
    ttfb_ms: quantiles(all.ttfb),
    overhead_ms: quantiles(all.overhead),
    series: {
      latency_p50: q.map((x) => x.latency.p50),
      latency_p95: q.map((x) => x.latency.p95),
      ttfb_p50: q.map((x) => x.ttfb.p50),
      ttfb_p95: q.map((x) => x.ttfb.p95),
      overhead_p50: q.map((x) => x.overhead.p50),
      overhead_p95: q.map((x) => x.overhead.p95),
    },
  };
}

/** Requests per error code in the sample (with the status each came with), most frequent first. */
function errorCodes(records: UsageRecord[]) {
  const counts = new Map<string, { error_code: string; status: number; requests: number }>();
  for (const r of records) {
    if (r.errorCode === null) continue;
    const key = `${r.errorCode} ${r.status}`;
    const c = counts.get(key) ?? { error_code: r.errorCode, status: r.status, requests: 0 };
    c.requests++;
    counts.set(key, c);
  }
  return [...counts.values()].sort((a, b) => b.requests - a.requests || (a.error_code < b.error_code ? -1 : 1));
}

export async function latencyAnswer({ queryUsage, listPage }: Sources, { filter, interval }: LatencyParams) {
  const { first, size, count } = bucketStarts(filter, interval);
  const bucketOf = (ts: number) => Math.min(count - 1, Math.floor((ts - first) / size));
  const [byModel, byStatus, overTime] = await Promise.all([
    queryUsage({ ...filter, groupBy: ['provider', 'model'] }),
    queryUsage({ ...filter, groupBy: ['status'] }),
    queryUsage({ ...filter, groupBy: [], interval }),
  ]);
  const series = { requests: Array<number>(count).fill(0), errors: Array<number>(count).fill(0) };
  for (const r of overTime) {
    const i = r.bucket === undefined ? -1 : Math.round((r.bucket - first) / size);
    if (i < 0 || i >= count) continue;
    series.requests[i] += r.requests;
    series.errors[i] += r.errorCount;
  }
  const sample = await readSample(listPage, filter, { first, size, count }, series.requests);
  const sampled = new Map<string, UsageRecord[]>();
  for (const r of sample.records) {
    const key = modelKey(r.provider, r.servedModel ?? r.model);
    const list = sampled.get(key);
    if (list) list.push(r);
    else sampled.set(key, [r]);
  }
  const ranked = [...byModel].sort((a, b) => b.requests - a.requests);
  const total = overTime.reduce((a, r) => ({ requests: a.requests + r.requests, errors: a.errors + r.errorCount }), {
    requests: 0,
    errors: 0,
  });
  return {
    from: new Date(filter.from).toISOString(),
    to: new Date(filter.to).toISOString(),
    interval,
    filters: filter.filters,
    buckets: Array.from({ length: count }, (_, i) => new Date(first + i * size).toISOString()),
    sample: {
      records: sample.records.length,
      limit: LATENCY_SAMPLE_MAX,
      complete: sample.complete,
      oldest: sample.records.length
        ? new Date(sample.records.reduce((t, r) => Math.min(t, r.ts), Infinity)).toISOString()
        : null,
    },
    models: ranked.slice(0, MODELS_MAX).map((r) => ({
      provider: r.group.provider ?? NONE,
      model: r.group.model ?? NONE,
      requests: r.requests,
      errors: r.errorCount,
      ...timings(sampled.get(modelKey(r.group.provider, r.group.model)) ?? [], sample.weights, bucketOf, count),
    })),
    models_other: Math.max(0, ranked.length - MODELS_MAX),
    errors: {
      ...total,
      by_status: [...byStatus]
        .sort((a, b) => Number(a.group.status) - Number(b.group.status))
        .map((r) => ({ status: Number(r.group.status), requests: r.requests, errors: r.errorCount })),
      by_code: errorCodes(sample.records),
      series,
    },
  };
}
