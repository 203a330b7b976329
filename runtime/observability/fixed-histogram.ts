/**
 * A Prometheus histogram kept as a fixed array of bucket counts per series: an observation is a short scan of the
 * bounds and two additions, with no labels object, hash string or label check (prom-client's Histogram does all
 * three per observe). The exposition (buckets, _sum, _count) is built when Prometheus scrapes. Registered on a
 * prom-client Registry as a metric of its own, so a multi-core gateway sums it like the others.
 */
import type { Registry } from 'prom-client';
import { SeriesTable } from './series-table';

/** One line of the exposition, as prom-client's metrics give it from get(). */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

interface Buckets {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  counts: Float64Array;
  sum: number;
}

export class FixedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly rows: SeriesTable<Buckets>;

  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    this.rows = new SeriesTable<Buckets>(labelNames, () => ({ counts: new Float64Array(bounds.length + 1), sum: 0 }));
    registry.registerMetric(this as never);
  }

  /** The series with these label values (in labelNames order): kept by a caller that observes it often. */
  series(labelValues: readonly string[]): Buckets {
    return this.rows.row(labelValues);
  }

  observe(labelValues: readonly string[], value: number): void {
    this.add(this.rows.row(labelValues), value);
  }

  add(series: Buckets, value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    series.counts[i]++;
    series.sum += value;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    for (const { labels, values: v } of this.rows.entries()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += v.counts[i];
        const le = i < this.bounds.length ? this.bounds[i] : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels, value: v.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: cumulative });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** prom-client's Registry calls these on its metrics (resetMetrics, a worker's reset). */
  reset(): void {
    for (const { values } of this.rows.entries()) {
      values.counts.fill(0);
      values.sum = 0;
    }
  }
}
