/**
 * Effective-dated prices: catalog entries and overrides with `effective_from` (and optionally `effective_to`) are in
 * force only within their window, so that a record is priced with the price in force at its time, and repricing an
 * old month after a price change leaves it at the old price. Outside every window an entry's undated price applies;
 * a model with dated prices only is unpriced outside them.
 */
import type { CatalogModel, ModelPrice } from './model-price';

export interface DatedPrice {
  from: number;
  to: number;
  price: CatalogModel;
  origin: ModelPrice['origin'];
}

export const isDated = (m: { effective_from?: string; effective_to?: string }): boolean =>
  m.effective_from !== undefined || m.effective_to !== undefined;

export class DatedPrices {
  private readonly byKey = new Map<string, DatedPrice[]>();

  get size(): number {
    return this.byKey.size;
  }

  add(key: string, m: CatalogModel, origin: ModelPrice['origin']): void {
    const from = m.effective_from === undefined ? -Infinity : Date.parse(m.effective_from);
    const to = m.effective_to === undefined ? Infinity : Date.parse(m.effective_to);
    const list = this.byKey.get(key) ?? [];
    // Among overlapping windows the latest start wins.
    list.push({ from, to, price: m, origin });
    list.sort((a, b) => b.from - a.from);
    this.byKey.set(key, list);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** The dated price of `key` in force at `at`, if any. */
  at(key: string, at: number): DatedPrice | undefined {
    return this.byKey.get(key)?.find((d) => d.from <= at && at < d.to);
  }
}
