/**
 * One generated record in JS (the SQLite generator; bench/scale/postgres.ts writes the same in SQL): the combination
 * of its slot, its customer, and its status, tokens, cost, stream flag and timings drawn from `r`.
 *
 * Built as one plain object literal (object spreads cost microseconds each, most of a record's time), and records
 * with the same tags share one frozen tags object (the generator keys its tag-set ids by it).
 */
import type { UsageRecord } from '../../records/usage-record';
import { logUniform } from '../../cli/demo-traffic';
import { COMBOS, COMBO_SLOT, COMBO_SLOTS, CUSTOMERS, CUSTOMER_NAMES, CUSTOMER_SLOT, CUSTOMER_SLOTS } from './mix';
import { FAILURE_SHARE, STAGING_SHARE } from './mix';

/** Record ids: the generator's sequence number, zero-padded so that ids sort as they were made. */
export const scaleId = (g: number): string => `scale-${String(g).padStart(10, '0')}`;

const sharedTags = new Map<number, Readonly<Record<string, string>>>();

/** The one frozen tags object of a combination, customer and env. */
function tagsOf(combo: number, customer: number, staging: boolean): Readonly<Record<string, string>> {
  const k = (combo * CUSTOMERS + customer) * 2 + (staging ? 1 : 0);
  let tags = sharedTags.get(k);
  if (tags === undefined) {
    const c = COMBOS[combo];
    const t: Record<string, string> = {
      agent: c.agent,
      feature: c.feature,
      customer_id: CUSTOMER_NAMES[customer],
      team: c.team,
    };
    if (staging) t.env = 'staging';
    tags = Object.freeze(t);
    sharedTags.set(k, tags);
  }
  return tags;
}

export function scaleRecord(r: () => number, g: number, ts: number): UsageRecord {
  const combo = COMBO_SLOT[Math.floor(r() * COMBO_SLOTS)];
  const c = COMBOS[combo];
  const customer = CUSTOMER_SLOT[Math.floor(r() * CUSTOMER_SLOTS)];
  const tags = tagsOf(combo, customer, r() < STAGING_SHARE);
  const status = r() < FAILURE_SHARE ? (r() < 0.7 ? 429 : 500) : 200;
  const inputAll = logUniform(r, c.inLo, c.inHi);
  const cacheRead = r() < 0.6 ? Math.min(inputAll - 1, Math.round(inputAll * c.cache * r() * 2)) : 0;
  const output = logUniform(r, c.outLo, c.outHi);
  const reasoning = c.reasoning ? Math.round(output * (0.3 + 0.5 * r())) : 0;
  const failed = status !== 200;
  const priced = c.inRate > 0;
  const tokens = (n: number) => (failed ? null : n);
  const cost = BigInt(inputAll - cacheRead) * BigInt(c.inRate) + BigInt(output) * BigInt(c.outRate);
  const costPico = failed ? 0n : priced ? cost + BigInt(cacheRead) * BigInt(c.inRate / 10) : null;
  const latencyMs = 200 + Math.floor(r() * 8000);
  const ttfbMs = 100 + Math.floor(r() * 800);
  return {
    id: scaleId(g),
    ts,
    workspaceId: c.workspaceId,
    keyId: c.keyId,
    provider: c.provider,
    model: c.model,
    servedModel: c.model,
    endpoint: c.endpoint,
    status,
    streamed: r() < 0.04 && c.endpoint !== 'messages',
    inputTokens: tokens(inputAll - cacheRead),
    outputTokens: tokens(output),
    cacheReadTokens: tokens(cacheRead),
    cacheWriteTokens: tokens(0),
    cacheWrite1hTokens: tokens(0),
    reasoningTokens: tokens(reasoning),
    citationTokens: tokens(0),
    searchQueries: tokens(0),
    searchContextSize: null,
    costPico,
    // No negotiated discount in the mix: the list cost is the cost.
    listCostPico: costPico,
    provenance: failed ? 'failed' : priced ? 'measured' : 'unpriced',
    priceVersion: priced && !failed ? 'scale' : null,
    latencyMs,
    ttfbMs,
    // The provider's time: the latency less an overhead of 1 to 12 ms.
    upstreamMs: latencyMs - (1 + (ttfbMs % 12)),
    tags,
    errorCode: null,
    usageSource: failed ? 'none' : 'provider',
    providerCostPico: null,
    costDisagrees: null,
    toolCalls: null,
    priceId: priced && !failed ? `${c.provider}/${c.model}` : null,
    serviceTier: null,
    inputAudioTokens: null,
    outputAudioTokens: null,
  };
}
