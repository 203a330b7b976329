/**
 * What changes between two sets of prices in force (before and after `tollgate prices update`): models that get
 * a price, models whose prices change, and models that lose theirs. Compared on the effective prices, so a model
 * whose local override (pricing.models, a provider module, pricing.litellm_file) wins before and after is unchanged.
 * Service-tier rates are compared with the rest: an answer that names its tier is billed by them.
 */
import type { PriceCatalog } from './catalog';
import { PRICE_FIELDS } from './entry-prices';
import type { ModelPrice } from './model-price';

export interface PriceChange {
  /** provider/model */
  id: string;
  /** The price fields that differ, each as "field old -> new" ("-" for none). */
  fields: string[];
}

export interface CatalogDiff {
  added: string[];
  changed: PriceChange[];
  removed: string[];
  /** Of the changed: the price fields that had a non-zero rate and now are $0, as in `changed` (a free model is rare). */
  zeroed: PriceChange[];
}

const isZero = (v: unknown): boolean => typeof v === 'string' && /^0+(\.0*)?$/.test(v);

const show = (v: unknown): string => (v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));

function byId(prices: PriceCatalog): Map<string, ModelPrice> {
  return new Map(prices.models().map((m) => [`${m.provider}/${m.model}`, m]));
}

export function diffCatalogs(before: PriceCatalog, after: PriceCatalog): CatalogDiff {
  const old = byId(before);
  const now = byId(after);
  const diff: CatalogDiff = { added: [], changed: [], removed: [], zeroed: [] };
  for (const [id, next] of now) {
    const prev = old.get(id);
    if (!prev) {
      diff.added.push(id);
      continue;
    }
    const fields = PRICE_FIELDS.filter((f) => show(prev[f]) !== show(next[f])).map(
      (f) => `${f} ${show(prev[f])} -> ${show(next[f])}`,
    );
    if (fields.length > 0) diff.changed.push({ id, fields });
    const zeroed = PRICE_FIELDS.filter((f) => typeof prev[f] === 'string' && !isZero(prev[f]) && isZero(next[f])).map(
      (f) => `${f} ${show(prev[f])} -> ${show(next[f])}`,
    );
    if (zeroed.length > 0) diff.zeroed.push({ id, fields: zeroed });
  }
  for (const id of old.keys()) if (!now.has(id)) diff.removed.push(id);
  return diff;
}

/**
 * Imported models whose price in force comes from a local override instead: the overrides the update kept.
 */
export function keptOverrides(after: PriceCatalog, importedIds: readonly string[]): string[] {
  const now = byId(after);
  return importedIds.filter((id) => {
    const origin = now.get(id)?.origin;
    return origin !== undefined && origin !== 'imported';
  });
}
