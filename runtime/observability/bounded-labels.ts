/** The label value of everything beyond a cap, and of models without a price. */
export const OTHER = 'other';

/**
 * The values a label may take, capped: the first `max` distinct values keep their own value, any later one is
 * OTHER. Keeps the number of series (and the memory of the metrics) bounded whatever clients send.
 */
export class BoundedLabel {
  private readonly kept = new Set<string>();

  constructor(private readonly max: number) {}

  of(value: string): string {
    if (this.kept.has(value)) return value;
    if (this.kept.size >= this.max) return OTHER;
    this.kept.add(value);
    return value;
  }
}
