import { expect } from 'chai';
import { PriceCatalog } from '../../pricing/catalog';
import { priceUsage } from '../../pricing/cost';
import type { Usage } from '../../core/usage';
import { prng } from '../helpers/prng';

const CHAT = { endpoint: 'chat.completions' as const, counted: true };

/** The cost of a usage under a catalog, and its list cost. */
function priced(catalog: PriceCatalog, provider: string, model: string, usage: Usage) {
  const p = priceUsage(catalog.lookup(provider, model), usage, CHAT);
  return { cost: p.costPico, list: p.listCostPico };
}

describe('list cost beside the effective cost (pricing.discounts)', () => {
  const list = new PriceCatalog();
  // 24% off: the multiplier 0.76 a team measured across its rates.
  const discounted = PriceCatalog.fromConfig({ discounts: { openai: '0.24' } });

  it('a 0.24 discount makes the cost 0.76 x the list cost, exactly in pico-USD', () => {
    const usage = { inputTokens: 1_000, outputTokens: 500, cacheReadTokens: 2_000 };
    const atList = priced(list, 'openai', 'gpt-4o', usage);
    const atDiscount = priced(discounted, 'openai', 'gpt-4o', usage);
    // gpt-4o: $2.50 input, $10 output, $1.25 cached input per 1M tokens.
    expect(atList).to.deep.equal({ cost: 10_000_000_000n, list: 10_000_000_000n });
    expect(atDiscount).to.deep.equal({ cost: 7_600_000_000n, list: 10_000_000_000n });
    expect(atDiscount.cost! * 100n).to.equal(atDiscount.list! * 76n);
  });

  it('the list cost equals the cost priced without the discount, whatever the counts and the model', () => {
    const rnd = prng(22);
    const models = [
      ['openai', 'gpt-4o'],
      ['openai', 'gpt-4o-mini'],
      ['openai', 'gpt-5'],
      ['openai', 'o3'],
    ];
    for (let i = 0; i < 500; i++) {
      const [provider, model] = models[i % models.length];
      const n = (max: number) => Math.floor(rnd() * max);
      const usage = { inputTokens: n(200_000), outputTokens: n(30_000), cacheReadTokens: n(50_000) };
      const odd = PriceCatalog.fromConfig({ discounts: { openai: ['0.24', '0.333333', '0.07', '0.5'][i % 4] } });
      expect(priced(odd, provider, model, usage).list, `${model} ${JSON.stringify(usage)}`).to.equal(
        priced(list, provider, model, usage).cost,
      );
    }
  });

  it("a provider without a discount, and the provider's own figure, keep list cost = cost", () => {
    const usage = { inputTokens: 1_000, outputTokens: 10 };
    const other = priced(discounted, 'anthropic', 'claude-sonnet-4-5', usage);
    expect(other.list).to.equal(other.cost);
    const reported = priceUsage(
      discounted.lookup('openrouter', 'openai/gpt-4o'),
      { ...usage, providerCostUsd: '0.0026' },
      CHAT,
    );
    expect(reported).to.include({ costPico: 2_600_000_000n, listCostPico: 2_600_000_000n });
    expect(priceUsage(discounted.lookup('openai', 'no-such-model'), usage, CHAT).listCostPico).to.equal(undefined);
  });
});
