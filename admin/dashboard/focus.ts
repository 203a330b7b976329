/**
 * The FOCUS (FinOps Open Cost and Usage Specification, version 1.2) export of GET /api/usage.focus.csv: one charge
 * row per UTC day, provider, model, key and workspace (and value of each tag asked for). BilledCost, EffectiveCost and
 * ContractedCost are the recorded cost, at the effective price (after a negotiated discount of pricing.discounts);
 * ListCost is the same usage at the catalog's list price. Requests priced before records kept a list cost count in
 * ListCost at their cost, and x_ListCostUnknownRequests says how many (storage/list-cost.ts). A row whose cost is
 * unknown (every request unpriced or not counted) leaves its cost cells empty rather than write $0; x_CostStatus says
 * which rows those are, and a lower bound is marked the same way.
 */
import { formatUsd } from '../../pricing/money';
import { costStatus, knownCost } from '../../storage/counters';
import { knownListCost, listCostUnknownCount } from '../../storage/list-cost';
import { UNTAGGED, type UsageGroupRow } from '../../storage/store';
import { csvCell } from './csv';

const DAY_MS = 86_400_000;

/** The built-in dimensions a charge row is split by, in this order, before the tags asked for. */
export const FOCUS_GROUP_BY = ['provider', 'model', 'key_id', 'workspace'] as const;

/** FOCUS 1.2 columns (mandatory ones, and the conditional ones that apply to metered model usage), then Tollgate's. */
export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ResourceId',
  'ResourceType',
  'ServiceCategory',
  'ServiceName',
  'ServiceSubcategory',
  'SkuId',
  'SubAccountId',
  'SubAccountName',
  'SubAccountType',
  'Tags',
  'x_CostStatus',
  'x_Requests',
  'x_InputTokens',
  'x_OutputTokens',
  'x_CacheReadTokens',
  'x_CacheWriteTokens',
  'x_ReasoningTokens',
  'x_UnpricedRequests',
  'x_NotCountedRequests',
  'x_EstimatedRequests',
  'x_ErrorRequests',
  'x_ListCostUnknownRequests',
] as const;

/** A tag key as a column name: x_tag_<key>, anything but letters, digits and _ written as _. */
export const tagColumn = (key: string): string => `x_tag_${key.replace(/[^A-Za-z0-9_]/g, '_')}`;

export function focusHeader(tags: readonly string[]): string {
  return `${[...FOCUS_COLUMNS, ...tags.map(tagColumn)].map(csvCell).join(',')}\r\n`;
}

const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

/** The UTC calendar month holding `ms`: [start, end). */
function monthOf(ms: number): [number, number] {
  const d = new Date(ms);
  return [Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)];
}

export interface FocusContext {
  /** The export's range: a row's charge period is its UTC day cut to it. */
  from: number;
  to: number;
  tags: readonly string[];
  /** Workspace id -> display name (configuration). */
  workspaceNames: Readonly<Record<string, string>>;
}

/** The lines of one chunk of rows (grouped by FOCUS_GROUP_BY and the tags, interval day), CRLF ends. */
export function focusLines(rows: readonly UsageGroupRow[], c: FocusContext): string {
  let out = '';
  for (const r of rows) {
    const day = r.bucket ?? c.from;
    const start = Math.max(day, c.from);
    const end = Math.min(day + DAY_MS, c.to);
    const [periodStart, periodEnd] = monthOf(start);
    const provider = r.group.provider ?? '';
    const model = r.group.model ?? '';
    const keyId = r.group.key_id ?? '';
    const workspace = r.group.workspace ?? '';
    const cost = knownCost(r);
    const usd = cost === null ? '' : formatUsd(cost);
    const list = knownListCost(r);
    const tokens = r.inputTokens + r.outputTokens + r.cacheReadTokens + r.cacheWriteTokens;
    const tagValues = c.tags.map((t) => r.group[t] ?? UNTAGGED);
    const tagged = Object.fromEntries(c.tags.flatMap((t, i) => (tagValues[i] === UNTAGGED ? [] : [[t, tagValues[i]]])));
    const cells: string[] = [
      usd,
      provider,
      provider,
      'USD',
      iso(periodEnd),
      iso(periodStart),
      'Usage',
      '',
      `${model} on ${provider}: ${r.requests} requests, ${tokens} tokens`,
      'Usage-Based',
      iso(end),
      iso(start),
      String(tokens),
      'Tokens',
      usd,
      usd,
      provider,
      list === null ? '' : formatUsd(list),
      'Standard',
      String(tokens),
      'Tokens',
      provider,
      provider,
      keyId,
      keyId ? 'Gateway API key' : '',
      'AI and Machine Learning',
      model,
      'Generative AI',
      model,
      workspace,
      c.workspaceNames[workspace] ?? workspace,
      workspace ? 'Workspace' : '',
      Object.keys(tagged).length ? JSON.stringify(tagged) : '',
      costStatus(r),
      String(r.requests),
      String(r.inputTokens),
      String(r.outputTokens),
      String(r.cacheReadTokens),
      String(r.cacheWriteTokens),
      String(r.reasoningTokens),
      String(r.unknownCostCount),
      String(r.notCountedCount),
      String(r.estimatedCount),
      String(r.errorCount),
      String(listCostUnknownCount(r)),
      ...tagValues,
    ];
    out += `${cells.map(csvCell).join(',')}\r\n`;
  }
  return out;
}

/** The export's range in chunks of whole UTC days (the first and last cut to the range), each read on its own. */
export function focusChunks(from: number, to: number, days = 7): [number, number][] {
  const out: [number, number][] = [];
  for (let start = from; start < to;) {
    const end = Math.min(Math.floor(start / DAY_MS) * DAY_MS + days * DAY_MS, to);
    out.push([start, end]);
    start = end;
  }
  return out;
}
