import { expect } from 'chai';
import { normalizeProviderSlug, pricingConfigSchema } from '../../pricing/config';

/** Every issue of an invalid pricing block, as "path: message" lines. */
function issues(raw: unknown): string[] {
  const r = pricingConfigSchema.safeParse(raw);
  if (r.success) throw new Error('expected the pricing block to be refused');
  return r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

const model = (fields: Record<string, unknown>) => ({ models: [{ provider: 'openai', model: 'x', ...fields }] });
const parsed = (fields: Record<string, unknown>) => pricingConfigSchema.parse(model(fields)).models[0];

describe('pricing: block of the config', () => {
  describe('prices', () => {
    it('reads numbers and decimal strings (trimmed) as canonical decimals', () => {
      expect(parsed({ input: ' 2.50 ', output: 10, cache_read: '1.5e-1', citation: 0 })).to.deep.equal({
        provider: 'openai',
        model: 'x',
        input: '2.5',
        output: '10',
        cache_read: '0.15',
        citation: '0',
      });
    });

    it('converts per-token prices to per-1M and takes _per_1m as the plain field', () => {
      expect(
        parsed({
          input_per_token: 0.0000025,
          output_per_1m: '10',
          cache_write_1h_per_token: '0.00001',
          reasoning_per_1m: 3,
        }),
      ).to.deep.equal({
        provider: 'openai',
        model: 'x',
        input: '2.5',
        output: '10',
        cache_write_1h: '10',
        reasoning: '3',
      });
    });

    it('names a value that is no number, or negative', () => {
      expect(issues(model({ input: 'abc' }))).to.deep.equal(['models.0.input: must be a decimal number, got "abc"']);
      expect(issues(model({ output_per_token: '-0.000001' }))).to.deep.equal([
        'models.0.output_per_token: must not be negative (got -0.000001)',
      ]);
    });

    it('refuses a bucket given twice, naming the second spelling', () => {
      expect(issues(model({ input: 1, input_per_1m: 1 }))).to.deep.equal([
        'models.0.input_per_1m: give only one of input, input_per_1m',
      ]);
      expect(issues(model({ cache_read_per_token: 1e-7, cache_read: 0.1, cache_read_per_1m: 0.1 }))).to.deep.equal([
        'models.0.cache_read_per_1m: give only one of cache_read, cache_read_per_1m, cache_read_per_token',
      ]);
    });

    it('refuses per-token values above 0.01 USD, and per-1M values below 0.001 or above 10,000, saying what to write instead', () => {
      expect(issues(model({ output_per_token: 0.0100001 }))).to.deep.equal([
        'models.0.output_per_token: 0.0100001 USD per token is implausibly large and looks like a per-1M-tokens price; write output: 0.0100001 (USD per 1M tokens)',
      ]);
      expect(issues(model({ input_per_1m: 0.0009 }))).to.deep.equal([
        'models.0.input_per_1m: 0.0009 USD per 1M tokens is implausibly small and looks like a per-token price; input_per_1m is USD per 1M tokens: write input: 900 or input_per_token: 0.0009',
      ]);
      expect(issues(model({ output: '10000.5' }))).to.deep.equal([
        'models.0.output: 10000.5 USD per 1M tokens is implausibly large; output is USD per 1M tokens (use output_per_token for per-token prices)',
      ]);
      // the limits themselves are accepted
      expect(parsed({ output_per_token: 0.01, input: 0.001, cache_read: 10000 })).to.include({
        output: '10000',
        input: '0.001',
        cache_read: '10000',
      });
    });
  });

  describe('fees, tiers and metadata', () => {
    it('request fees (flat or by search context size) and search query fees in USD', () => {
      expect(parsed({ request_fee: 0.005, search_query_fee: '0.01' })).to.include({
        request_fee: '0.005',
        search_query_fee: '0.01',
      });
      expect(parsed({ request_fee: { low: 0.005, high: '0.012' } }).request_fee).to.deep.equal({
        low: '0.005',
        high: '0.012',
      });
      expect(issues(model({ request_fee: { medium: -1 } }))).to.deep.equal([
        'models.0.request_fee.medium: must not be negative (got -1)',
      ]);
      expect(issues(model({ request_fee: 'free' }))).to.deep.equal([
        'models.0.request_fee: must be a decimal number, got "free"',
      ]);
      expect(issues(model({ search_query_fee: -0.01 }))).to.deep.equal([
        'models.0.search_query_fee: must not be negative (got -0.01)',
      ]);
    });

    it('long-context tiers with the same unit rules, issues named by tier', () => {
      expect(
        parsed({ input: 1, long_context: [{ above_input_tokens: 200000, input_per_token: 0.000002, output: 15 }] })
          .long_context,
      ).to.deep.equal([{ above_input_tokens: 200000, input: '2', output: '15' }]);
      expect(
        issues(
          model({
            long_context: [
              { above_input_tokens: 1, input: 1 },
              { above_input_tokens: 2, input: 0.00001 },
            ],
          }),
        )[0],
      ).to.match(/^models\.0\.long_context\.1\.input: 0\.00001 USD per 1M tokens is implausibly small/);
    });

    it('keeps the metadata given and normalises the provider slug and model id', () => {
      const m = pricingConfigSchema.parse({
        models: [
          {
            provider: ' Google ',
            model: ' gem-x ',
            input: 1,
            kind: 'embedding',
            context_window: 8192,
            max_output_tokens: 1024,
            created: 1_700_000_000,
            aliases: ['gem-x-latest'],
          },
        ],
      }).models[0];
      expect(m).to.deep.equal({
        provider: 'gemini',
        model: 'gem-x',
        input: '1',
        kind: 'embedding',
        context_window: 8192,
        max_output_tokens: 1024,
        created: 1_700_000_000,
        aliases: ['gem-x-latest'],
      });
    });
  });

  describe('discounts', () => {
    it('are fractions below 1, keyed by provider slug', () => {
      expect(pricingConfigSchema.parse({ discounts: { OpenAI: 0.25, 'x-ai': '0.999' } }).discounts).to.deep.equal({
        openai: '0.25',
        xai: '0.999',
      });
      expect(pricingConfigSchema.parse({}).discounts).to.deep.equal({});
    });

    it('or by provider/model, the provider part normalised and the model kept as written', () => {
      const parsed = pricingConfigSchema.parse({ discounts: { Google: '0.1', 'Google/gemini-2.5-Pro': 0.3 } });
      expect(parsed.discounts).to.deep.equal({ gemini: '0.1', 'gemini/gemini-2.5-Pro': '0.3' });
    });

    it('a percentage is refused with a hint, up to 100', () => {
      expect(issues({ discounts: { openai: 1 } })).to.deep.equal([
        'discounts.openai: a discount is a fraction off below 1 (0.2 = 20% off), got 1; did you mean 0.01?',
      ]);
      expect(issues({ discounts: { openai: 100 } })).to.deep.equal([
        'discounts.openai: a discount is a fraction off below 1 (0.2 = 20% off), got 100; did you mean 1?',
      ]);
      expect(issues({ discounts: { openai: 150 } })).to.deep.equal([
        'discounts.openai: a discount is a fraction off below 1 (0.2 = 20% off), got 150',
      ]);
      expect(issues({ discounts: { openai: 'ten' } })).to.deep.equal([
        'discounts.openai: must be a decimal number, got "ten"',
      ]);
    });
  });

  it('normalizeProviderSlug maps vendor names to provider slugs', () => {
    expect(['google', 'X-AI', ' mistralai ', 'OpenAI', 'groq'].map(normalizeProviderSlug)).to.deep.equal([
      'gemini',
      'xai',
      'mistral',
      'openai',
      'groq',
    ]);
  });
});
