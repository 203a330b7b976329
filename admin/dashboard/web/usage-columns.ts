/** The columns of the usage table: what each shows, exports to CSV and sorts by, and how a cost is written. */
import type { Totals } from './api.js';
import { costSharePct, int, money } from './format.js';

export const ZERO: Totals = {
  requests: 0,
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  cache_write_1h_tokens: 0,
  reasoning_tokens: 0,
  citation_tokens: 0,
  search_queries: 0,
  cost_usd: '0',
  cost_pico: '0',
  cost_status: 'known',
  list_cost_usd: '0',
  list_cost_pico: '0',
  discount_usd: '0',
  list_cost_unknown_count: 0,
  unpriced_count: 0,
  not_counted_count: 0,
  estimated_count: 0,
  partial_count: 0,
  error_count: 0,
};

/** List price less cost, in pico-USD (0 when unknown). */
export const discountPico = (r: Totals): bigint =>
  r.list_cost_pico === null ? 0n : BigInt(r.list_cost_pico) - pico(r);

/** The known part of a cost, for sorting, shares and charts (an unknown cost adds nothing known). */
export const pico = (t: Totals): bigint => BigInt(t.cost_pico ?? '0');

/**
 * A cost as shown: unknown is "—" and all not counted is "not counted" (never $0); a sum that leaves unpriced or
 * not-counted requests out is marked "≥".
 */
export function costText(t: Totals): string {
  if (t.cost_status === 'not_counted') return 'not counted';
  if (t.cost_pico === null) return '—';
  return t.cost_status === 'lower_bound' ? `≥ ${money(t.cost_pico)}` : money(t.cost_pico);
}

/** The share of the total cost, or "" for a group whose cost is unknown (as in the CSV). */
const share = (r: Totals, t: Totals): string => (r.cost_pico === null ? '' : costSharePct(pico(r), pico(t)));

export interface Column {
  /** data-col, and the CSV column name (except "group", whose CSV column is the dimension). */
  key: string;
  label: string;
  title?: string;
  /** The exact value as the CSV has it. */
  value(r: Totals, total: Totals): string;
  /** What the cell shows. */
  show(r: Totals, total: Totals): string;
  /** Sort key. */
  sort(r: Totals, total: Totals): bigint;
  /** Hidden when every row is zero (rarely used counters). */
  optional?: boolean;
}

const count = (key: keyof Totals, label: string, title?: string, optional = false): Column => ({
  key,
  label,
  title,
  optional,
  value: (r) => String(r[key]),
  show: (r) => int(r[key] as number),
  sort: (r) => BigInt(r[key] as number),
});

const shareBp = (r: Totals, total: Totals): bigint => {
  const s = share(r, total);
  return s ? BigInt(s.replace('.', '')) : -1n;
};

export const COLUMNS: Column[] = [
  count('requests', 'Requests'),
  count('input_tokens', 'Input', 'Input tokens at the normal rate (excluding cache reads and writes)'),
  count('output_tokens', 'Output', 'Output tokens, reasoning included'),
  count('cache_read_tokens', 'Cache read', 'Input tokens served from the prompt cache'),
  count('cache_write_tokens', 'Cache write', 'Input tokens written to the prompt cache'),
  count('cache_write_1h_tokens', 'Cache write 1h', 'Input tokens written to the 1-hour cache', true),
  count('reasoning_tokens', 'Reasoning', 'Reasoning tokens (already counted in output)'),
  {
    key: 'cost_usd',
    label: 'Cost',
    title:
      'Sum of known costs; unpriced and not-counted requests are counted apart, never as $0 (— unknown, ≥ some requests unpriced or not counted)',
    value: (r) => r.cost_usd ?? '',
    show: costText,
    sort: pico,
  },
  {
    key: 'cost_share_pct',
    label: 'Share',
    title: 'Share of the total cost',
    value: share,
    show: (r, t) => {
      const s = share(r, t);
      return s ? `${s}%` : '—';
    },
    sort: shareBp,
  },
  {
    // Shown when a negotiated discount (pricing.discounts) took something off some group: cost + discount = list price.
    key: 'discount_usd',
    label: 'Discount',
    title: 'What negotiated discounts took off the list price: the cost at list price is the cost plus this',
    optional: true,
    value: (r) => r.discount_usd ?? '',
    show: (r) => (r.list_cost_pico === null ? '—' : money(discountPico(r))),
    sort: (r) => discountPico(r),
  },
  count('unpriced_count', 'Unpriced', 'Requests whose model has no price: cost unknown'),
  count('not_counted_count', 'Not counted', 'Audio and images with nothing to price them by: no cost', true),
  count(
    'estimated_count',
    'Estimated',
    'Requests whose usage was counted with a tokenizer (the provider reported none)',
  ),
  count('partial_count', 'Partial', 'Streams that did not complete: the cost covers what was streamed', true),
  count('error_count', 'Errors', 'Requests that failed'),
];
