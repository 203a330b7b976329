import { OTHER } from './bounded-labels';

/**
 * The values of one tag key that earn their own metric label: the configured ones, and the `max` with the most
 * recorded spend, chosen again at most every `refreshMs`. Clients choose tag values, so a label is never given
 * first come, first served: a flood of made-up values that spend nothing cannot take one from a value that spends.
 *
 * Spend is tracked for at most CANDIDATES_PER_LABEL x `max` values; a new value takes the place of the one with
 * the least spend (a value that spends keeps its place against values that do not).
 */
const CANDIDATES_PER_LABEL = 4;

export class TagValueLabels {
  private readonly configured: ReadonlySet<string>;
  /** Recorded spend in USD of the values tracked. */
  private readonly spend = new Map<string, number>();
  private labelled: ReadonlySet<string> = new Set();
  private chosenAt = 0;

  constructor(
    configured: readonly string[],
    private readonly max: number,
    private readonly refreshMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.configured = new Set(configured);
  }

  /** The label of a value, counting `usd` (its request's known cost, 0 when unknown) toward its spend. */
  of(value: string, usd: number): string {
    if (this.configured.has(value)) return value;
    this.count(value, usd);
    if (this.now() - this.chosenAt >= this.refreshMs) this.choose();
    return this.labelled.has(value) ? value : OTHER;
  }

  private count(value: string, usd: number): void {
    const spent = this.spend.get(value);
    if (spent !== undefined) {
      this.spend.set(value, spent + usd);
      return;
    }
    if (this.spend.size >= this.max * CANDIDATES_PER_LABEL) {
      const [least, leastSpend] = this.least();
      // A value that spends nothing does not push out one that did.
      if (usd <= 0 && leastSpend > 0) return;
      this.spend.delete(least);
    }
    this.spend.set(value, usd);
  }

  private least(): [string, number] {
    let found: [string, number] = ['', Infinity];
    for (const entry of this.spend) {
      if (entry[1] < found[1]) found = entry;
      if (found[1] <= 0) break;
    }
    return found;
  }

  /** The values with the most spend (a value without any earns no label). */
  private choose(): void {
    this.chosenAt = this.now();
    const spenders = [...this.spend].filter(([, usd]) => usd > 0).sort((a, b) => b[1] - a[1]);
    this.labelled = new Set(spenders.slice(0, this.max).map(([value]) => value));
  }
}
