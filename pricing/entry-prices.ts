/**
 * The price fields of a catalog entry: which fields are prices (an override replaces them as a whole, a request is
 * billed by them), whether two entries bill alike, and an entry with a negotiated discount applied.
 */
import { mulDecimal, subDecimal } from './decimal';
import { BUCKETS, MEDIA_PRICE_FIELDS, type CatalogModel } from './model-price';

/** Fields that are prices, service tiers included (an answer's tier picks its rates). */
export const PRICE_FIELDS = [
  ...BUCKETS.filter((b) => !(MEDIA_PRICE_FIELDS as readonly string[]).includes(b)),
  'request_fee',
  'search_query_fee',
  'long_context',
  'service_tiers',
  ...MEDIA_PRICE_FIELDS,
] as const;

/** Whether two entries bill every request alike. */
export function samePrices(a: CatalogModel, b: CatalogModel): boolean {
  return PRICE_FIELDS.every((f) => JSON.stringify(a[f]) === JSON.stringify(b[f]));
}

/** Every price and fee of an entry multiplied by (1 - discount), exactly. */
export function discounted(p: CatalogModel, discount: string): CatalogModel {
  const factor = subDecimal('1', discount);
  const mul = (v: string | undefined): string | undefined => (v === undefined ? undefined : mulDecimal(v, factor));
  const rates = <T extends object>(o: T): T =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? mul(v) : v])) as T;
  const out: CatalogModel = { ...p };
  for (const f of [...BUCKETS, 'search_query_fee', 'per_second', 'per_character'] as const) {
    if (out[f] !== undefined) out[f] = mul(out[f]);
  }
  if (p.request_fee !== undefined)
    out.request_fee = typeof p.request_fee === 'string' ? mul(p.request_fee) : rates(p.request_fee);
  if (p.long_context) out.long_context = p.long_context.map(rates);
  if (p.per_image) out.per_image = rates(p.per_image);
  if (p.service_tiers) {
    out.service_tiers = Object.fromEntries(Object.entries(p.service_tiers).map(([k, v]) => [k, v && rates(v)]));
  }
  return out;
}
