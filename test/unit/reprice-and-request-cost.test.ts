import { expect } from 'chai';
import { GatewayContext } from '../../core/context';
import { captureLogs, createTestContext } from '../../testing';
import type { UsageRecord } from '../../records/usage-record';
import { PriceCatalog } from '../../pricing/catalog';
import type { CatalogFile } from '../../pricing/model-price';
import { PROVIDER_REPORTED, repriceRecord } from '../../pricing/reprice';
import { RequestCost } from '../../services/request-cost';
import { usageRecord } from '../helpers/records';

/** Rates in pico-USD a token: input 1,000,000, output 2,000,000, cache read 100,000, cache write 3,000,000, 1h write 4,000,000. */
const FILE: CatalogFile = {
  version: '2026-02-01.3',
  source: 'test',
  retrieved: '2026-02-01',
  currency: 'USD',
  unit: 'per 1M tokens',
  skipped: [],
  models: [
    {
      provider: 'openai',
      model: 'r-1',
      kind: 'chat',
      input: '1',
      output: '2',
      cache_read: '0.1',
      cache_write: '3',
      cache_write_1h: '4',
      reasoning: '1.5',
    },
    {
      provider: 'perplexity',
      model: 'p-1',
      kind: 'chat',
      input: '1',
      citation: '5',
      request_fee: { low: '0.001', high: '0.002' },
    },
    { provider: 'perplexity', model: 'p-2', kind: 'chat', input: '1', search_query_fee: '0.003' },
  ],
};
const catalog = () => PriceCatalog.fromConfig({}, { bundled: FILE });

function record(r: Partial<UsageRecord>): UsageRecord {
  return usageRecord({ keyId: 'k', model: 'r-1', searchContextSize: null, ttfbMs: 1, ...r });
}

describe('repricing stored records and the cost of a request', () => {
  describe('repriceRecord', () => {
    it("prices every token bucket of a record under today's catalog", () => {
      const r = record({
        inputTokens: 10,
        outputTokens: 20,
        reasoningTokens: 4,
        cacheReadTokens: 30,
        cacheWriteTokens: 40,
        cacheWrite1hTokens: 50,
        provenance: 'measured',
        costPico: 1n,
        priceVersion: 'old',
      });
      // 10 x 1,000,000 + 16 x 2,000,000 + 4 x 1,500,000 + 30 x 100,000 + 40 x 3,000,000 + 50 x 4,000,000
      // = 10,000,000 + 32,000,000 + 6,000,000 + 3,000,000 + 120,000,000 + 200,000,000 = 371,000,000
      expect(repriceRecord(catalog(), r)).to.deep.equal({
        costPico: 371_000_000n,
        listCostPico: 371_000_000n,
        provenance: 'measured',
        priceVersion: '2026-02-01.3',
        usageSource: 'provider',
        priceId: 'openai/r-1',
        costDisagrees: null,
      });
    });

    it('an unpriced record becomes measured once its model has a price; one still without a price stays unpriced', () => {
      expect(repriceRecord(catalog(), record({ inputTokens: 7 }))).to.deep.equal({
        costPico: 7_000_000n,
        listCostPico: 7_000_000n,
        provenance: 'measured',
        priceVersion: '2026-02-01.3',
        usageSource: 'provider',
        priceId: 'openai/r-1',
        costDisagrees: null,
      });
      expect(repriceRecord(catalog(), record({ model: 'r-9', inputTokens: 7 }))).to.deep.equal({
        costPico: null,
        listCostPico: null,
        provenance: 'unpriced',
        priceVersion: null,
        usageSource: 'provider',
        priceId: null,
        costDisagrees: null,
      });
      expect(repriceRecord(catalog(), record({ model: null, inputTokens: 7 }))).to.deep.equal({
        costPico: null,
        listCostPico: null,
        provenance: 'unpriced',
        priceVersion: null,
        usageSource: 'provider',
        priceId: null,
        costDisagrees: null,
      });
    });

    it('prices the model that served the request', () => {
      expect(
        repriceRecord(catalog(), record({ model: 'r-9', servedModel: 'r-1', outputTokens: 1 }))?.costPico,
      ).to.equal(2_000_000n);
    });

    it('keeps an estimated or partial provenance', () => {
      expect(repriceRecord(catalog(), record({ provenance: 'estimated', inputTokens: 1 }))).to.deep.equal({
        costPico: 1_000_000n,
        listCostPico: 1_000_000n,
        provenance: 'estimated',
        priceVersion: '2026-02-01.3',
        usageSource: 'tokenizer',
        priceId: 'openai/r-1',
        costDisagrees: null,
      });
      expect(repriceRecord(catalog(), record({ provenance: 'partial', model: 'r-9', inputTokens: 1 }))).to.deep.equal({
        costPico: null,
        listCostPico: null,
        provenance: 'partial',
        priceVersion: null,
        usageSource: 'tokenizer',
        priceId: null,
        costDisagrees: null,
      });
    });

    it('charges the request fee of the search context size recorded, low when none was', () => {
      const p = { provider: 'perplexity', model: 'p-1', inputTokens: 1, citationTokens: 2 };
      // 1,000,000 + 2 x 5,000,000 + fee
      expect(repriceRecord(catalog(), record({ ...p, searchContextSize: 'high' }))?.costPico).to.equal(2_011_000_000n);
      expect(repriceRecord(catalog(), record(p))?.costPico).to.equal(1_011_000_000n);
      // 1,000,000 + 2 x 3,000,000,000 (a record needs token counts to be priced at all)
      expect(
        repriceRecord(catalog(), record({ provider: 'perplexity', model: 'p-2', inputTokens: 1, searchQueries: 2 }))
          ?.costPico,
      ).to.equal(6_001_000_000n);
    });

    it('leaves alone failures, endpoints not counted and records without provider or endpoint', () => {
      for (const r of [
        record({ provenance: 'failed', inputTokens: 1 }),
        record({ provenance: 'not_counted', inputTokens: 1 }),
        record({ provider: null, inputTokens: 1 }),
        record({ endpoint: null, inputTokens: 1 }),
      ]) {
        expect(repriceRecord(catalog(), r)).to.equal(undefined);
      }
      expect(PROVIDER_REPORTED).to.equal('provider-reported');
    });

    it('a provider-reported cost is compared again; one as precise as the computed cost stays the cost', () => {
      // computed: 1 x 1,000,000 = $0.000001 (6 decimals); the stored $0.0000021 has 7 and is 110% off it
      const r = record({
        provenance: 'measured',
        priceVersion: PROVIDER_REPORTED,
        costPico: 2_100_000n,
        inputTokens: 1,
      });
      expect(repriceRecord(catalog(), r)).to.deep.equal({
        costPico: 2_100_000n,
        listCostPico: 2_100_000n,
        provenance: 'measured',
        priceVersion: 'provider-reported',
        usageSource: 'provider',
        priceId: 'openai/r-1',
        costDisagrees: true,
      });
    });

    it('audio and images are left alone: the units they are priced by are not stored', () => {
      expect(repriceRecord(catalog(), record({ endpoint: 'audio.speech', inputTokens: 5 }))).to.equal(undefined);
    });
  });

  describe('RequestCost', () => {
    it('prices the settled usage once, again only when the usage object is replaced', () => {
      const cost = new RequestCost(catalog());
      const ctx = createTestContext({ provider: 'openai', model: 'r-1', usage: { inputTokens: 3 } });
      const first = cost.of(ctx);
      expect(first).to.deep.equal({
        costPico: 3_000_000n,
        listCostPico: 3_000_000n,
        provenanceHint: 'priced',
        priceId: 'openai/r-1',
      });
      expect(cost.of(ctx)).to.equal(first);
      ctx.usage = { inputTokens: 5, servedModel: 'r-1' };
      expect(cost.of(ctx)).to.deep.equal({
        costPico: 5_000_000n,
        listCostPico: 5_000_000n,
        provenanceHint: 'priced',
        priceId: 'openai/r-1',
      });
      expect(cost.prices.version).to.equal('2026-02-01.3');
    });

    it('prices the served model, and nothing without a provider, a model or an endpoint', () => {
      const cost = new RequestCost(catalog());
      expect(
        cost.of(createTestContext({ provider: 'openai', model: 'r-9', usage: { outputTokens: 1, servedModel: 'r-1' } }))
          .costPico,
      ).to.equal(2_000_000n);
      expect(cost.of(createTestContext({ model: 'r-1', usage: { inputTokens: 1 } }))).to.deep.equal({
        costPico: null,
        provenanceHint: 'unpriced',
        reason: 'model not in the price catalog',
      });
      expect(cost.of(createTestContext({ provider: 'openai', usage: { inputTokens: 1 } }))).to.deep.equal({
        costPico: null,
        provenanceHint: 'unpriced',
        reason: 'model not in the price catalog',
      });
      const noEndpoint = new GatewayContext('id', 'POST', '/v1/unknown', undefined, {}, captureLogs().logger);
      noEndpoint.usage = { inputTokens: 1 };
      expect(cost.of(noEndpoint)).to.deep.equal({ costPico: null, provenanceHint: 'unpriced' });
    });
  });
});
