/**
 * A batch of usage records packed by column, for the trip to the SQLite writer thread (storage/sqlite-writer.ts).
 *
 * Why: a structured clone walks every record property by property, its key strings included, on both threads.
 * Packed, the numbers travel in typed arrays whose buffers are transferred (no copy), the strings that repeat
 * from record to record (workspace, key, provider, model, endpoint, provenance, tag keys and values...) once per
 * batch in a table, and the request ids end to end in one string: less CPU per record on both threads.
 *
 * A batch that does not fit the packed shape (a value of an unexpected type, as a hand-edited spill file may
 * hold, a cost outside 64 bits, a `__proto__` tag key) is not packed: the caller sends its records as they are,
 * so the writer sees exactly what it was given and the store decides whether a value is bad.
 */
import type { CostProvenance, UsageRecord, UsageSource } from '../records/usage-record';
import type { EndpointKey } from '../core/usage';

/** Slots of a record in `numbers` (NaN stands for null) and in `refs` (string indexes, -1 stands for null). */
const NUM = {
  ts: 0,
  status: 1,
  inputTokens: 2,
  outputTokens: 3,
  cacheReadTokens: 4,
  cacheWriteTokens: 5,
  cacheWrite1hTokens: 6,
  reasoningTokens: 7,
  citationTokens: 8,
  searchQueries: 9,
  latencyMs: 10,
  ttfbMs: 11,
  costDisagrees: 12,
  inputAudioTokens: 13,
  outputAudioTokens: 14,
  upstreamMs: 15,
};
const STR = {
  workspaceId: 0,
  keyId: 1,
  provider: 2,
  model: 3,
  servedModel: 4,
  endpoint: 5,
  searchContextSize: 6,
  provenance: 7,
  priceVersion: 8,
  errorCode: 9,
  usageSource: 10,
  providerCost: 11,
  toolCalls: 12,
  priceId: 13,
  serviceTier: 14,
  generationId: 15,
};
const NF = Object.keys(NUM).length;
/** The bits of `hasCost`. */
const COST = 1;
const LIST = 2;
const SF = Object.keys(STR).length;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export interface PackedRecords {
  count: number;
  /** The request ids end to end; record i's ends at idEnd[i] (one string to copy, not one per record). */
  ids: string;
  idEnd: Int32Array;
  /** The distinct strings of the batch. */
  strings: string[];
  numbers: Float64Array;
  refs: Int32Array;
  streamed: Uint8Array;
  /** costPico and listCostPico; `hasCost` tells a null from a zero (bit COST for costs, LIST for listCosts). */
  costs: BigInt64Array;
  listCosts: BigInt64Array;
  hasCost: Uint8Array;
  /** Record i's tags are the pairs tagStart[i] .. tagStart[i + 1] - 1 of tagRefs (key, value: string indexes). */
  tagStart: Int32Array;
  tagRefs: Int32Array;
}

/**
 * The string table and the number and string-index columns being filled, with writers that refuse a value that
 * does not fit.
 */
class ColumnWriter {
  readonly strings: string[] = [];
  private readonly index = new Map<string, number>();
  readonly numbers: Float64Array;
  readonly refs: Int32Array;
  // Most fields (and tags, by position) repeat the previous record's value: comparing with it first skips most
  // Map lookups. Slots 0..SF-1 are the string fields, then a key and a value slot per tag position.
  private readonly last: (string | undefined)[] = [];
  private readonly lastRef: number[] = [];

  constructor(count: number) {
    this.numbers = new Float64Array(count * NF);
    this.refs = new Int32Array(count * SF);
  }

  /** Writes a number (or null, where `nullable`) into slot `at`; false when the value does not fit. */
  number(at: number, v: unknown, nullable: boolean): boolean {
    if (typeof v === 'number' && !Number.isNaN(v)) this.numbers[at] = v;
    else if (v === null && nullable) this.numbers[at] = NaN;
    else return false;
    return true;
  }

  /** Writes a string's index (or null, where `nullable`) into slot `at`; false when the value does not fit. */
  string(at: number, v: unknown, nullable: boolean): boolean {
    if (typeof v === 'string') this.refs[at] = this.cachedRef(at % SF, v);
    else if (v === null && nullable) this.refs[at] = -1;
    else return false;
    return true;
  }

  cachedRef(slot: number, v: string): number {
    if (v !== this.last[slot]) {
      this.last[slot] = v;
      this.lastRef[slot] = this.ref(v);
    }
    return this.lastRef[slot];
  }

  private ref(s: string): number {
    let i = this.index.get(s);
    if (i === undefined) {
      i = this.strings.push(s) - 1;
      this.index.set(s, i);
    }
    return i;
  }
}

/** Writes record i's number and string fields; false when one does not fit. */
function writeFields(p: ColumnWriter, r: UsageRecord, i: number): boolean {
  const b = i * NF;
  const s = i * SF;
  return (
    typeof r.id === 'string' &&
    typeof r.streamed === 'boolean' &&
    p.number(b + NUM.ts, r.ts, false) &&
    p.number(b + NUM.status, r.status, false) &&
    p.number(b + NUM.inputTokens, r.inputTokens, true) &&
    p.number(b + NUM.outputTokens, r.outputTokens, true) &&
    p.number(b + NUM.cacheReadTokens, r.cacheReadTokens, true) &&
    p.number(b + NUM.cacheWriteTokens, r.cacheWriteTokens, true) &&
    p.number(b + NUM.cacheWrite1hTokens, r.cacheWrite1hTokens, true) &&
    p.number(b + NUM.reasoningTokens, r.reasoningTokens, true) &&
    p.number(b + NUM.citationTokens, r.citationTokens, true) &&
    p.number(b + NUM.searchQueries, r.searchQueries, true) &&
    p.number(b + NUM.latencyMs, r.latencyMs, false) &&
    p.number(b + NUM.ttfbMs, r.ttfbMs, true) &&
    p.string(s + STR.workspaceId, r.workspaceId, true) &&
    p.string(s + STR.keyId, r.keyId, true) &&
    p.string(s + STR.provider, r.provider, true) &&
    p.string(s + STR.model, r.model, true) &&
    p.string(s + STR.servedModel, r.servedModel, true) &&
    p.string(s + STR.endpoint, r.endpoint, true) &&
    // Absent on records spilled before migration 003; stored as null either way.
    p.string(s + STR.searchContextSize, r.searchContextSize ?? null, true) &&
    p.string(s + STR.provenance, r.provenance, false) &&
    p.string(s + STR.priceVersion, r.priceVersion, true) &&
    p.string(s + STR.errorCode, r.errorCode, true) &&
    // The fields of migration 008 are absent on records spilled before it; stored as null either way.
    p.number(
      b + NUM.costDisagrees,
      r.costDisagrees === undefined || r.costDisagrees === null ? null : r.costDisagrees ? 1 : 0,
      true,
    ) &&
    p.string(s + STR.usageSource, r.usageSource ?? null, true) &&
    p.string(
      s + STR.providerCost,
      typeof r.providerCostPico === 'bigint' ? r.providerCostPico.toString() : (r.providerCostPico ?? null),
      true,
    ) &&
    p.string(s + STR.toolCalls, r.toolCalls ? JSON.stringify(r.toolCalls) : null, true) &&
    p.string(s + STR.priceId, r.priceId ?? null, true) &&
    // The fields of migration 012, absent on records spilled before it.
    p.string(s + STR.serviceTier, r.serviceTier ?? null, true) &&
    p.number(b + NUM.inputAudioTokens, r.inputAudioTokens ?? null, true) &&
    p.number(b + NUM.outputAudioTokens, r.outputAudioTokens ?? null, true) &&
    // Migration 017's, absent on records spilled before it.
    p.string(s + STR.generationId, r.generationId ?? null, true) &&
    // Migration 019's, absent on records spilled before it.
    p.number(b + NUM.upstreamMs, r.upstreamMs ?? null, true)
  );
}

const isInt64 = (v: unknown): v is bigint => typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX;

/** Packs a batch; undefined when a record does not fit the packed shape (the caller sends the records as they are). */
export function packRecords(records: readonly UsageRecord[]): PackedRecords | undefined {
  const n = records.length;
  const columns = new ColumnWriter(n);
  const ids = new Array<string>(n);
  const idEnd = new Int32Array(n);
  let idChars = 0;
  const streamed = new Uint8Array(n);
  const costs = new BigInt64Array(n);
  const listCosts = new BigInt64Array(n);
  const hasCost = new Uint8Array(n);
  const tagStart = new Int32Array(n + 1);
  const tagRefs: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = records[i];
    if (!writeFields(columns, r, i)) return undefined;
    ids[i] = r.id;
    idEnd[i] = idChars += r.id.length;
    streamed[i] = r.streamed ? 1 : 0;
    const cost = r.costPico as unknown;
    if (isInt64(cost)) {
      costs[i] = cost;
      hasCost[i] = COST;
    } else if (cost !== null) return undefined;
    // Migration 022's, absent on records spilled before it.
    const list = (r.listCostPico ?? null) as unknown;
    if (isInt64(list)) {
      listCosts[i] = list;
      hasCost[i] |= LIST;
    } else if (list !== null) return undefined;
    const tags = r.tags as unknown;
    if (typeof tags !== 'object' || tags === null || Array.isArray(tags)) return undefined;
    const keys = Object.keys(tags);
    for (let k = 0; k < keys.length; k++) {
      const v = (tags as Record<string, unknown>)[keys[k]];
      if (typeof v !== 'string' || keys[k] === '__proto__') return undefined;
      tagRefs.push(columns.cachedRef(SF + 2 * k, keys[k]), columns.cachedRef(SF + 2 * k + 1, v));
    }
    tagStart[i + 1] = tagRefs.length >> 1;
  }
  return {
    count: n,
    ids: ids.join(''),
    idEnd,
    strings: columns.strings,
    numbers: columns.numbers,
    refs: columns.refs,
    streamed,
    costs,
    listCosts,
    hasCost,
    tagStart,
    tagRefs: Int32Array.from(tagRefs),
  };
}

/** The buffers a postMessage can transfer instead of copying. */
export function packedBuffers(p: PackedRecords): ArrayBuffer[] {
  return [p.idEnd, p.numbers, p.refs, p.streamed, p.costs, p.listCosts, p.hasCost, p.tagStart, p.tagRefs].map(
    (a) => a.buffer as ArrayBuffer,
  );
}

export function unpackRecords(p: PackedRecords): UsageRecord[] {
  const { strings, numbers, refs } = p;
  const num = (at: number): number | null => (Number.isNaN(numbers[at]) ? null : numbers[at]);
  const str = (at: number): string | null => (refs[at] < 0 ? null : strings[refs[at]]);
  const { tagStart, tagRefs } = p;
  const out = new Array<UsageRecord>(p.count);
  // Consecutive records with the same tags share one frozen tags object: the store then works out its texts
  // (the tags column, the tag set's canonical text) once per run of such records (codec.ts, memoLastFrozen).
  let tags: Record<string, string> = {};
  let lastFrom = 0;
  let lastTo = -1;
  for (let i = 0; i < p.count; i++) {
    const b = i * NF;
    const s = i * SF;
    const from = tagStart[i];
    const to = tagStart[i + 1];
    if (sameRefs(tagRefs, lastFrom, lastTo, from, to)) {
      if (!Object.isFrozen(tags)) Object.freeze(tags); // shared from now on (freezing costs: only shared ones are)
    } else {
      tags = {};
      for (let t = from; t < to; t++) tags[strings[tagRefs[2 * t]]] = strings[tagRefs[2 * t + 1]];
      lastFrom = from;
      lastTo = to;
    }
    const providerCost = str(s + STR.providerCost);
    const disagrees = num(b + NUM.costDisagrees);
    const toolCalls = str(s + STR.toolCalls);
    // Field order as plugins/usage-recorder/record.ts builds it (one object shape).
    out[i] = {
      id: p.ids.slice(i === 0 ? 0 : p.idEnd[i - 1], p.idEnd[i]),
      ts: numbers[b + NUM.ts],
      workspaceId: str(s + STR.workspaceId),
      keyId: str(s + STR.keyId),
      provider: str(s + STR.provider),
      model: str(s + STR.model),
      servedModel: str(s + STR.servedModel),
      endpoint: str(s + STR.endpoint) as EndpointKey | null,
      status: numbers[b + NUM.status],
      streamed: p.streamed[i] === 1,
      inputTokens: num(b + NUM.inputTokens),
      outputTokens: num(b + NUM.outputTokens),
      cacheReadTokens: num(b + NUM.cacheReadTokens),
      cacheWriteTokens: num(b + NUM.cacheWriteTokens),
      cacheWrite1hTokens: num(b + NUM.cacheWrite1hTokens),
      reasoningTokens: num(b + NUM.reasoningTokens),
      citationTokens: num(b + NUM.citationTokens),
      searchQueries: num(b + NUM.searchQueries),
      searchContextSize: str(s + STR.searchContextSize),
      costPico: p.hasCost[i] & COST ? p.costs[i] : null,
      listCostPico: p.hasCost[i] & LIST ? p.listCosts[i] : null,
      provenance: str(s + STR.provenance) as CostProvenance,
      priceVersion: str(s + STR.priceVersion),
      latencyMs: numbers[b + NUM.latencyMs],
      ttfbMs: num(b + NUM.ttfbMs),
      tags,
      errorCode: str(s + STR.errorCode),
      usageSource: str(s + STR.usageSource) as UsageSource | null,
      providerCostPico: providerCost === null ? null : BigInt(providerCost),
      costDisagrees: disagrees === null ? null : disagrees === 1,
      toolCalls: toolCalls === null ? null : (JSON.parse(toolCalls) as Record<string, number>),
      priceId: str(s + STR.priceId),
      serviceTier: str(s + STR.serviceTier),
      generationId: str(s + STR.generationId),
      upstreamMs: num(b + NUM.upstreamMs),
      inputAudioTokens: num(b + NUM.inputAudioTokens),
      outputAudioTokens: num(b + NUM.outputAudioTokens),
    };
  }
  return out;
}

/** Whether tag pairs a .. aEnd - 1 and b .. bEnd - 1 of `refs` are the same strings in the same order. */
function sameRefs(refs: Int32Array, a: number, aEnd: number, b: number, bEnd: number): boolean {
  if (aEnd - a !== bEnd - b) return false;
  for (let k = 2 * a, j = 2 * b; k < 2 * aEnd; k++, j++) if (refs[k] !== refs[j]) return false;
  return true;
}
