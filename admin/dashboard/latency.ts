/**
 * The answer of GET /api/latency (the dashboard's latency and errors view), built on the reader thread.
 *
 * Requests and errors (per status, per provider and model, per bucket) are exact, read from the rollups like every
 * usage total. Percentiles (latency, time to first byte, and the gateway's overhead: latency less the provider's time
 * kept in upstream_ms) need each request's times, which only the per-request records hold: they come from the
 * newest LATENCY_SAMPLE_MAX records of the range, read newest first by the (ts, id) index a page at a time, so a
 * range of a million records costs the same bounded read as one of twenty thousand; `sample` says how much of the
 * range that covers. Error codes come from the same sample.
 */
import type { UsageRecord } from '../../records/usage-record';
import { NONE, type Interval, type RequestPage, type ListRequestsQuery, type UsageFilter } from '../../storage/store';
import type { UsageGroupRow, UsageQuery } from '../../storage/store';
import { bucketStarts } from '../query-params';

/** Records one answer reads for its percentiles and error codes (the newest of the range). */
export const LATENCY_SAMPLE_MAX = 20_000;
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

/** The nearest-rank percentile of sorted values; null for none. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** p50 and p95 of some values (sorted here). */
function quantiles(values: number[]): { p50: number | null; p95: number | null } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

async function readSample(listPage: Sources['listPage'], filter: UsageFilter) {
  const records: UsageRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await listPage({ ...filter, limit: Math.min(PAGE, LATENCY_SAMPLE_MAX - records.length), cursor });
    records.push(...page.records);
    cursor = page.nextCursor;
  } while (cursor && records.length < LATENCY_SAMPLE_MAX);
  return { records, complete: cursor === null };
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
type Times = Record<keyof typeof TIMES, number[]>;
const noTimes = (): Times => ({ latency: [], ttfb: [], overhead: [] });

function addTimes(into: Times, r: UsageRecord): void {
  for (const [name, of] of Object.entries(TIMES) as [keyof Times, (r: UsageRecord) => number | null][]) {
    const v = of(r);
    if (v !== null) into[name].push(v);
  }
}

/** Latency, time-to-first-byte and overhead percentiles over the range and per bucket, for one provider and model. */
function timings(records: UsageRecord[], bucketOf: (ts: number) => number, count: number) {
  const perBucket = Array.from({ length: count }, noTimes);
  const all = noTimes();
  for (const r of records) {
    addTimes(perBucket[bucketOf(r.ts)], r);
    addTimes(all, r);
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
  const [byModel, byStatus, overTime, sample] = await Promise.all([
    queryUsage({ ...filter, groupBy: ['provider', 'model'] }),
    queryUsage({ ...filter, groupBy: ['status'] }),
    queryUsage({ ...filter, groupBy: [], interval }),
    readSample(listPage, filter),
  ]);
  const sampled = new Map<string, UsageRecord[]>();
  for (const r of sample.records) {
    const key = modelKey(r.provider, r.servedModel ?? r.model);
    const list = sampled.get(key);
    if (list) list.push(r);
    else sampled.set(key, [r]);
  }
  const ranked = [...byModel].sort((a, b) => b.requests - a.requests);
  const series = { requests: Array<number>(count).fill(0), errors: Array<number>(count).fill(0) };
  for (const r of overTime) {
    const i = r.bucket === undefined ? -1 : Math.round((r.bucket - first) / size);
    if (i < 0 || i >= count) continue;
    series.requests[i] += r.requests;
    series.errors[i] += r.errorCount;
  }
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
      oldest: sample.records.length ? new Date(sample.records.at(-1)!.ts).toISOString() : null,
    },
    models: ranked.slice(0, MODELS_MAX).map((r) => ({
      provider: r.group.provider ?? NONE,
      model: r.group.model ?? NONE,
      requests: r.requests,
      errors: r.errorCount,
      ...timings(sampled.get(modelKey(r.group.provider, r.group.model)) ?? [], bucketOf, count),
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
