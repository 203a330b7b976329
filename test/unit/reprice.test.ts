import { expect } from 'chai';
import type { UsageRecord } from '../../core/usage';
import { PriceCatalog } from '../../pricing/catalog';
import { PROVIDER_REPORTED, repriceRecord } from '../../pricing/reprice';
import { usageRecord } from '../helpers/records';

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
      provenance: 'estimated',
      usageSource: 'tokenizer',
    });
    expect(
      repriceRecord(catalog, stored({ usageSource: 'tokenizer', streamed: true, provenance: 'partial' })),
    ).to.include({ costPico: SONAR, provenance: 'partial' });
    expect(repriceRecord(catalog, stored({ usageSource: 'provider' }))).to.include({
      costPico: SONAR,
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
