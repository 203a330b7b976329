/**
 * Counting per request without prom-client's label handling on the request path (a labels object, a hash string
 * and a label check per update): the values of each series are kept in plain maps, one level per label, and the
 * metrics read them when Prometheus scrapes (./metrics.ts). A lookup is one Map.get per label value, on strings
 * whose hashes V8 keeps: no key is built per update.
 */
export class SeriesTable<V> {
  /** Label value -> the next label's level; the last label's level holds the series. */
  private readonly root = new Map<string, unknown>();
  private readonly series: { labels: Record<string, string>; values: V }[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly empty: () => V,
  ) {}

  /** The values of the series with these label values (in labelNames order), created empty on first use. */
  row(labelValues: readonly string[]): V {
    let level = this.root;
    const last = this.labelNames.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(labelValues[i]) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(labelValues[i], (next = new Map()));
      level = next;
    }
    const values = level.get(labelValues[last]) as V | undefined;
    return values === undefined ? this.add(level, labelValues) : values;
  }

  entries(): IterableIterator<{ labels: Record<string, string>; values: V }> {
    return this.series.values();
  }

  private add(level: Map<string, unknown>, labelValues: readonly string[]): V {
    const labels: Record<string, string> = {};
    for (let i = 0; i < this.labelNames.length; i++) labels[this.labelNames[i]] = labelValues[i];
    const values = this.empty();
    level.set(labelValues[this.labelNames.length - 1], values);
    this.series.push({ labels, values });
    return values;
  }
}
