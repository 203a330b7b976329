/**
 * A reconciliation report: every UTC day x model (x scope) with the gateway's figures beside the provider's and a
 * status that says where a difference comes from. Stored whole with its run (migration 014) and served as is by
 * GET /api/reconciliation; amounts are exact USD decimal strings, never floats.
 */
import type { BillTokens } from './bill';
import type { GenerationCheck } from './openrouter-generations';

/**
 * - match: the same cost to the pico-dollar (and the same tokens where both count them)
 * - within_tolerance: the costs differ by no more than the tolerance (default 0.5%)
 * - discounted: the provider charged the gateway's list price times the account's inferred discount
 * - priced_differently: the same tokens at a different cost (a stale or wrong price): `ratio` is what the bill implies
 * - not_seen_by_gateway: the provider counted more tokens than the gateway received (another key, the console, a bypass)
 * - unpriced: the gateway could not price some of the line's records (no price for the model)
 * - drift: the figures differ in a way none of the above explains (the gateway counted more, or no tokens to compare)
 * - provider_only: the provider billed a day x model the gateway has no record of
 * - gateway_only: the gateway recorded traffic the provider has not billed, outside the restatement window
 * - not_final: as gateway_only or any difference, but inside the restatement window: the provider may still restate
 */
export type LineStatus =
  | 'match'
  | 'within_tolerance'
  | 'discounted'
  | 'priced_differently'
  | 'not_seen_by_gateway'
  | 'unpriced'
  | 'drift'
  | 'provider_only'
  | 'gateway_only'
  | 'not_final';

export interface GatewaySide {
  requests: number;
  tokens: BillTokens;
  /** The gateway's recorded cost of the priced records (measured and estimated): list price, or pricing.discounts'. */
  cost_usd: string;
  /**
   * The same records at the catalog's list price, before pricing.discounts: cost_usd where no discount is configured.
   * Absent from reports stored before the gateway kept it.
   */
  list_cost_usd?: string;
  /** Records with no price (their cost is not in cost_usd). */
  unpriced: number;
  estimated: number;
}

export interface ProviderSide {
  requests: number | null;
  tokens: BillTokens | null;
  /** Null when the provider reported usage but no cost for the line. */
  cost_usd: string | null;
}

export interface ReconciliationLine {
  day: string;
  model: string | null;
  /** The gateway workspace the provider's project, workspace or key maps to (reconcile config); null when unmapped. */
  scope: string | null;
  status: LineStatus;
  gateway: GatewaySide | null;
  provider: ProviderSide | null;
  /** The gateway's list cost times the inferred discount, when there is one. */
  expected_usd: string | null;
  /** Provider minus gateway (expected when discounted), in USD; null when one side has no cost. */
  difference_usd: string | null;
  /** Provider cost / gateway cost, 6 decimals; null when either is missing or zero. */
  ratio: string | null;
  /** One sentence saying what the status means for this line. */
  note: string;
}

export interface InferredDiscount {
  /** The steady fraction of list price the provider charges, 4 decimals (0.7600 = 24% off). */
  multiplier: string;
  /** The models it was measured on. */
  models: string[];
  /** Paste into the config to price at the discount: pricing.discounts.<provider> (the fraction off list price). */
  override: string;
}

export interface ReconciliationReport {
  provider: string;
  /** [from, to) as UTC days. */
  from: string;
  to: string;
  tolerance: string;
  discount: InferredDiscount | null;
  totals: {
    gateway_usd: string;
    /** The gateway's cost at list price, before pricing.discounts. Absent from reports stored before the gateway kept it. */
    gateway_list_usd?: string;
    provider_usd: string;
    difference_usd: string;
    /** |provider - expected| / provider over the final days, 6 decimals; null when the provider billed nothing. */
    drift: string | null;
  };
  /** The largest drift of a single final day, 6 decimals (what the alert threshold is checked against). */
  worst_day: { day: string; drift: string } | null;
  counts: Partial<Record<LineStatus, number>>;
  lines: ReconciliationLine[];
  /** OpenRouter: each record set beside its generation's cost (absent for a bill read per day). */
  generations?: GenerationCheck;
}
