import { expect } from 'chai';
import type { Usage } from '../../core/usage';
import { priceUsage } from '../../pricing/cost';
import type { ModelPrice } from '../../pricing/model-price';

const CHAT = { endpoint: 'chat.completions', counted: true } as const;

/**
 * A price entry built in the test (a new object each time, so nothing computed for another test is reused).
 * Rates are USD per 1M tokens: "1" is 1,000,000 pico-USD a token.
 */
function price(fields: Partial<ModelPrice>): ModelPrice {
  return { provider: 'acme', model: 'm1', kind: 'chat', id: 'm1', created: 0, origin: 'override', ...fields };
}

const cost = (fields: Partial<ModelPrice>, usage: Usage) => priceUsage(price(fields), usage, CHAT);
const unpriced = (reason: string) => ({ costPico: null, provenanceHint: 'unpriced', reason });

describe('cost of one request (priceUsage)', () => {
  it('sums every bucket at its own rate', () => {
    const p = { input: '1', output: '2', cache_read: '0.5', cache_write: '3', cache_write_1h: '4', citation: '6' };
    // 10 x 1,000,000 + 20 x 2,000,000 + 30 x 500,000 + 40 x 3,000,000 + 50 x 4,000,000 + 60 x 6,000,000
    // = 10,000,000 + 40,000,000 + 15,000,000 + 120,000,000 + 200,000,000 + 360,000,000 = 745,000,000
    const usage = {
      inputTokens: 10,
      outputTokens: 20,
      cacheReadTokens: 30,
      cacheWriteTokens: 40,
      cacheWrite1hTokens: 50,
      citationTokens: 60,
    };
    expect(cost(p, usage)).to.deep.equal({
      costPico: 745_000_000n,
      listCostPico: 745_000_000n,
      provenanceHint: 'priced',
      priceId: 'acme/m1',
    });
  });

  it('picks the highest long-context tier the whole prompt (input + every cache bucket) is above, whatever order the tiers are listed in', () => {
    const p = {
      input: '1',
      output: '2',
      cache_read: '0.5',
      long_context: [
        { above_input_tokens: 1000, input: '3' },
        { above_input_tokens: 5000, input: '5', output: '7' },
        { above_input_tokens: 2000, input: '4' },
      ],
    };
    // prompt 1,000: not above any tier: 1,000 x 1,000,000 + 1 x 2,000,000
    expect(cost(p, { inputTokens: 1000, outputTokens: 1 }).costPico).to.equal(1_002_000_000n);
    // prompt 1,001: tier 1,000: 1,001 x 3,000,000 + 1 x 2,000,000 (output falls back to the base rate)
    expect(cost(p, { inputTokens: 1001, outputTokens: 1 }).costPico).to.equal(3_005_000_000n);
    // prompt 2,500 = 100 input + 1,000 read + 700 write + 700 1h write: tier 2,000, where the 1h write has no rate
    expect(
      cost(p, { inputTokens: 100, cacheReadTokens: 1000, cacheWriteTokens: 700, cacheWrite1hTokens: 700 }),
    ).to.deep.equal(unpriced('acme/m1 has no cache_write_1h rate for 700 units'));
    // prompt 2,500 = 100 input + 1,000 read + 1,400 write: tier 2,000 (input 4; read 0.5 from the base; write falls back to input)
    // 100 x 4,000,000 + 1,000 x 500,000 + 1,400 x 4,000,000 = 400,000,000 + 500,000,000 + 5,600,000,000
    expect(cost(p, { inputTokens: 100, cacheReadTokens: 1000, cacheWriteTokens: 1400 }).costPico).to.equal(
      6_500_000_000n,
    );
    // prompt 5,001 = 4,000 input + 1,001 1h writes, with a 1h rate: tier 5,000 (input 5, output 7)
    const p1h = { ...p, cache_write_1h: '10' };
    // 4,000 x 5,000,000 + 1,001 x 10,000,000 + 2 x 7,000,000 = 20,000,000,000 + 10,010,000,000 + 14,000,000
    expect(cost(p1h, { inputTokens: 4000, cacheWrite1hTokens: 1001, outputTokens: 2 }).costPico).to.equal(
      30_024_000_000n,
    );
  });

  it('prices reasoning at its own rate only where there is one, and refuses more reasoning than output', () => {
    const p = { input: '1', output: '8', reasoning: '3' };
    // 100 output of which 60 reasoning: 40 x 8,000,000 + 60 x 3,000,000 = 500,000,000
    expect(cost(p, { outputTokens: 100, reasoningTokens: 60 }).costPico).to.equal(500_000_000n);
    expect(cost(p, { outputTokens: 100, reasoningTokens: 100 }).costPico).to.equal(300_000_000n);
    expect(cost(p, { outputTokens: 100, reasoningTokens: 101 })).to.deep.equal(
      unpriced('reasoningTokens 101 exceed outputTokens 100'),
    );
    expect(cost(p, { reasoningTokens: 5 })).to.deep.equal(unpriced('reasoningTokens 5 exceed outputTokens undefined'));
    expect(cost(p, { outputTokens: 100, reasoningTokens: 0 }).costPico).to.equal(800_000_000n);
    // without a reasoning rate, reasoning is output: 100 x 8,000,000
    expect(cost({ input: '1', output: '8' }, { outputTokens: 100, reasoningTokens: 200 }).costPico).to.equal(
      800_000_000n,
    );
  });

  it('falls back to the input rate for cache reads and writes without their own rate', () => {
    // 10 x 1,000,000 + 20 x 1,000,000 + 30 x 1,000,000
    expect(
      cost({ input: '1', output: '2' }, { inputTokens: 10, cacheReadTokens: 20, cacheWriteTokens: 30 }).costPico,
    ).to.equal(60_000_000n);
    expect(cost({ output: '2' }, { cacheReadTokens: 20 })).to.deep.equal(
      unpriced('acme/m1 has no cache_read rate for 20 units'),
    );
    expect(cost({ output: '2' }, { cacheWriteTokens: 20 })).to.deep.equal(
      unpriced('acme/m1 has no cache_write rate for 20 units'),
    );
  });

  it('names the bucket that has tokens but no rate', () => {
    expect(cost({ output: '2' }, { inputTokens: 1 })).to.deep.equal(unpriced('acme/m1 has no input rate for 1 units'));
    expect(cost({ input: '2' }, { outputTokens: 3 })).to.deep.equal(unpriced('acme/m1 has no output rate for 3 units'));
    expect(cost({ input: '2' }, { citationTokens: 4 })).to.deep.equal(
      unpriced('acme/m1 has no citation rate for 4 units'),
    );
    expect(cost({ input: '2' }, { searchQueries: 2 })).to.deep.equal(
      unpriced('acme/m1 has no search_query_fee rate for 2 units'),
    );
    // zero tokens in a bucket without a rate cost nothing and need no rate
    expect(cost({ input: '2' }, { inputTokens: 1, outputTokens: 0, citationTokens: 0 }).costPico).to.equal(2_000_000n);
  });

  describe('fees', () => {
    it('a flat request fee is added once; citations and searches are covered by it', () => {
      // 10 x 1,000,000 + $0.005 = 10,000,000 + 5,000,000,000
      expect(
        cost({ input: '1', request_fee: '0.005' }, { inputTokens: 10, citationTokens: 99, searchQueries: 3 }),
      ).to.deep.equal({
        costPico: 5_010_000_000n,
        listCostPico: 5_010_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
    });

    it('a request fee by search context size: the size reported, in any case and spacing, else low', () => {
      const p = { input: '1', request_fee: { low: '0.005', high: '0.012' } };
      expect(cost(p, { inputTokens: 1 }).costPico).to.equal(5_001_000_000n);
      expect(cost(p, { inputTokens: 1, searchContextSize: ' High ' }).costPico).to.equal(12_001_000_000n);
      expect(cost(p, { inputTokens: 1, searchContextSize: 'medium' })).to.deep.equal(
        unpriced('acme/m1 has no request fee for search context size medium'),
      );
    });

    it('a search query fee per query, also on a model priced only by fees', () => {
      // 3 x $0.01 = 30,000,000,000
      expect(cost({ search_query_fee: '0.01' }, { searchQueries: 3 })).to.deep.equal({
        costPico: 30_000_000_000n,
        listCostPico: 30_000_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
      expect(cost({ request_fee: '0.002' }, {})).to.deep.equal({
        costPico: 2_000_000_000n,
        listCostPico: 2_000_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
      expect(cost({ request_fee: { medium: '0.002' } }, { searchContextSize: 'medium' }).costPico).to.equal(
        2_000_000_000n,
      );
      // citations on a model with a search fee but no request fee and no citation rate: unpriced
      expect(cost({ search_query_fee: '0.01' }, { citationTokens: 1 })).to.deep.equal(
        unpriced('acme/m1 has no citation rate for 1 units'),
      );
    });
  });

  describe('what is not priced', () => {
    it('an entry with no token rate and no fee', () => {
      expect(cost({ context_window: 100 }, { inputTokens: 1 })).to.deep.equal(
        unpriced('acme/m1 has no token or request price'),
      );
    });

    it('no price, no usage, or a count that is not a non-negative whole number (named)', () => {
      expect(priceUsage(undefined, { inputTokens: 1 }, CHAT)).to.deep.equal(unpriced('model not in the price catalog'));
      expect(priceUsage(price({ input: '1' }), undefined, CHAT)).to.deep.equal(unpriced('no usage reported'));
      expect(cost({ input: '1' }, { outputTokens: -1 })).to.deep.equal(unpriced('invalid outputTokens: -1'));
      expect(cost({ input: '1' }, { searchQueries: 0.5 })).to.deep.equal(unpriced('invalid searchQueries: 0.5'));
      expect(cost({ input: '1', reasoning: '1' }, { reasoningTokens: 2 ** 53 })).to.deep.equal(
        unpriced(`invalid reasoningTokens: ${2 ** 53}`),
      );
      expect(cost({ input: '1' }, { inputTokens: 0 })).to.deep.equal({
        costPico: 0n,
        listCostPico: 0n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
    });

    it('a price the catalog could not read', () => {
      expect(cost({ input: 'abc' }, { inputTokens: 1 })).to.deep.equal(
        unpriced('unreadable price: not a decimal number: "abc"'),
      );
    });

    it('an image answer with nothing to price it by is not counted, even with a provider figure', () => {
      expect(
        priceUsage(price({ input: '1' }), { providerCostUsd: '1' }, { endpoint: 'images.generations', counted: false }),
      ).to.include({
        costPico: null,
        provenanceHint: 'not_counted',
      });
    });
  });

  describe('a cost the provider reported', () => {
    it('wins over the catalog price when at least as precise; a rounded one gives way to the computed cost', () => {
      // computed: 1000 x 1,000,000 = 1,000,000,000 ($0.001, 3 decimals); reported $0.0021 has 4: it is the cost,
      // and it is 110% off the computed one
      expect(cost({ input: '1' }, { inputTokens: 1000, providerCostUsd: '0.0021' })).to.deep.equal({
        costPico: 2_100_000_000n,
        listCostPico: 2_100_000_000n,
        provenanceHint: 'provider_reported',
        priceId: 'acme/m1',
        providerCostPico: 2_100_000_000n,
        computedCostPico: 1_000_000_000n,
        costDisagrees: true,
      });
      // $0 has no decimals: the exact computed cost stands; a provider with no rounding step that says $0 for a
      // $0.001 request disagrees with it
      expect(cost({ input: '1' }, { inputTokens: 1000, providerCostUsd: '0' })).to.deep.equal({
        costPico: 1_000_000_000n,
        listCostPico: 1_000_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
        providerCostPico: 0n,
        computedCostPico: 1_000_000_000n,
        costDisagrees: true,
      });
    });

    it('a negative or unreadable one falls back to the catalog price', () => {
      expect(cost({ input: '1' }, { inputTokens: 3, providerCostUsd: '-0.5' })).to.deep.equal({
        costPico: 3_000_000n,
        listCostPico: 3_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
      expect(cost({ input: '1' }, { inputTokens: 3, providerCostUsd: 'n/a' })).to.deep.equal({
        costPico: 3_000_000n,
        listCostPico: 3_000_000n,
        provenanceHint: 'priced',
        priceId: 'acme/m1',
      });
    });
  });
});
