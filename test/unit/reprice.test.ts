import { expect } from 'chai';
import type { UsageRecord } from '../../records/usage-record';
import { PriceCatalog } from '../../pricing/catalog';
import { PROVIDER_REPORTED, repriceRecord } from '../../pricing/reprice';
import { usageRecord } from '../helpers/records';
import { audioPreviewRates } from '../helpers/audio-rates';

/** A stored sonar chat record (11 input, 392 output tokens: perplexity/sonar_chat_completion.json's usage). */
function stored(over: Partial<UsageRecord> = {}): UsageRecord {
  return usageRecord({
    workspaceId: null,
    provider: 'perplexity',
    model: 'sonar',
    servedModel: 'sonar',
    inputTokens: 11,
    outputTokens: 392,
    searchContextSize: 'low',
    ...over,
  });
}

const NO_COUNTS = { inputTokens: null, outputTokens: null } as const;

describe('usage reprice: honest', () => {
  const catalog = new PriceCatalog();
  // sonar at the bundled price: (11 + 392) tokens x $1/1M = $0.000403, plus the low request fee $0.005.
  const SONAR = 5_403_000_000n;

  it('a record without usage stays unpriced: never $0, never the request fee alone', () => {
    // As an earlier reprice left it: a measured $0, and a request fee with no tokens behind it.
    for (const r of [
      stored({ ...NO_COUNTS, costPico: 0n, provenance: 'measured', priceVersion: 'x' }),
      stored({ ...NO_COUNTS, costPico: 5_000_000_000n, provenance: 'measured', priceVersion: 'x' }),
    ]) {
      expect(repriceRecord(catalog, r)).to.deep.equal({
        costPico: null,
        listCostPico: null,
        provenance: 'unpriced',
        priceVersion: null,
        usageSource: 'none',
        priceId: null,
        costDisagrees: null,
      });
    }
  });

  it('tokenizer counts stay estimated once priced; a cut stream stays partial', () => {
    expect(repriceRecord(catalog, stored({ usageSource: 'tokenizer', streamed: true }))).to.include({
      costPico: SONAR,
      listCostPico: SONAR,
      provenance: 'estimated',
      usageSource: 'tokenizer',
    });
    expect(
      repriceRecord(catalog, stored({ usageSource: 'tokenizer', streamed: true, provenance: 'partial' })),
    ).to.include({ costPico: SONAR, provenance: 'partial' });
    expect(repriceRecord(catalog, stored({ usageSource: 'provider' }))).to.include({
      costPico: SONAR,
      listCostPico: SONAR,
      provenance: 'measured',
      priceId: 'perplexity/sonar',
    });
  });

  it('infers where the counts of a record written before migration 008 came from', () => {
    // Streamed and unpriced: the counts may be the tokenizer's, so the new cost is only an estimate.
    expect(repriceRecord(catalog, stored({ streamed: true }))).to.include({
      provenance: 'estimated',
      usageSource: 'tokenizer',
    });
    // A non-streamed answer always carried its usage.
    expect(repriceRecord(catalog, stored({ streamed: false }))).to.include({
      provenance: 'measured',
      usageSource: 'provider',
    });
    expect(
      repriceRecord(catalog, stored({ streamed: true, provenance: 'estimated', costPico: 1n, priceVersion: 'x' })),
    ).to.include({ provenance: 'estimated', usageSource: 'tokenizer' });
  });

  it('an old provider-reported Perplexity cost is checked and replaced by the exact one', () => {
    // Recorded as Perplexity's rounded usage.cost, $0.005: kept as the provider's figure, agreeing once rounded.
    const r = stored({ costPico: 5_000_000_000n, provenance: 'measured', priceVersion: PROVIDER_REPORTED });
    expect(repriceRecord(catalog, r)).to.deep.equal({
      costPico: SONAR,
      listCostPico: SONAR,
      provenance: 'measured',
      priceVersion: catalog.version,
      usageSource: 'provider',
      priceId: 'perplexity/sonar',
      costDisagrees: false,
    });
  });

  it('leaves failures and uncounted endpoints alone', () => {
    expect(repriceRecord(catalog, stored({ provenance: 'failed', costPico: 0n, status: 500 }))).to.equal(undefined);
    expect(repriceRecord(catalog, stored({ provenance: 'not_counted', endpoint: 'audio.speech' }))).to.equal(undefined);
  });
});

describe('usage reprice: the served tier, audio tokens and a rounded provider figure', () => {
  const audioRates = audioPreviewRates();
  const openaiRecord = (over: Partial<UsageRecord>): UsageRecord =>
    stored({ provider: 'openai', searchContextSize: null, usageSource: 'provider', ...over });

  it('charges the tier the answer named, as when it was recorded (chat_completion_flex_built.json)', () => {
    const flex = openaiRecord({
      model: 'o3',
      servedModel: 'o3',
      inputTokens: 1000,
      outputTokens: 758,
      serviceTier: 'flex',
    });
    expect(repriceRecord(new PriceCatalog(), flex)).to.include({ costPico: 4_032_000_000n, provenance: 'measured' });
    // A tier the catalog does not price stays unknown.
    expect(repriceRecord(new PriceCatalog(), { ...flex, serviceTier: 'scale' })).to.include({
      costPico: null,
      listCostPico: null,
      provenance: 'unpriced',
    });
  });

  it('prices the audio share of the counts at the audio rates (chat_completion_audio_built.json)', () => {
    const audio = openaiRecord({
      model: 'gpt-4o-audio-preview',
      servedModel: 'gpt-4o-audio-preview',
      inputTokens: 120,
      inputAudioTokens: 100,
      outputTokens: 98,
      outputAudioTokens: 80,
    });
    expect(repriceRecord(audioRates, audio)).to.include({ costPico: 10_630_000_000n, provenance: 'measured' });
  });

  it("keeps Perplexity's rounding step: a figure half a step off agrees, 0.020 for $0.016204 does not", () => {
    const sonar = (figure: bigint, input: number) =>
      repriceRecord(
        new PriceCatalog(),
        stored({ inputTokens: input, outputTokens: 0, usageSource: 'provider', providerCostPico: figure }),
      );
    // 403 tokens x $1/1M + $0.005 = $0.005403; Perplexity printed 0.005.
    expect(sonar(5_000_000_000n, 403)).to.include({ costPico: 5_403_000_000n, costDisagrees: false });
    // 11,204 tokens + $0.005 = $0.016204 against 0.020.
    expect(sonar(20_000_000_000n, 11_204)).to.include({ costPico: 16_204_000_000n, costDisagrees: true });
  });
});
