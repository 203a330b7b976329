/**
 * Counting per request without prom-client's label handling on the request path (a labels object, a hash string
 * and a label check per update): the values of each series are kept in a plain map keyed by the joined label
 * values, and the metrics read them when Prometheus scrapes (./metrics.ts).
 */
export class SeriesTable<V> {
  private readonly rows = new Map<string, { labels: Record<string, string>; values: V }>();

  constructor(
    private readonly labelNames: readonly string[],
    private readonly empty: () => V,
  ) {}

  /** The values of the series with these label values (in labelNames order), created empty on first use. */
  row(labelValues: readonly string[]): V {
    const key = labelValues.join('\u0000');
    let row = this.rows.get(key);
    if (!row) {
      const labels: Record<string, string> = {};
      for (let i = 0; i < this.labelNames.length; i++) labels[this.labelNames[i]] = labelValues[i];
      this.rows.set(key, (row = { labels, values: this.empty() }));
    }
    return row.values;
  }

  entries(): IterableIterator<{ labels: Record<string, string>; values: V }> {
    return this.rows.values();
  }
}
