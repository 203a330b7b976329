import type { BudgetPolicy } from '../../config/limits';
import { GatewayError, type GatewayContext, type ProviderLookup } from '../../core';
import type { PriceLookup } from '../../core/services';
import type { ModelPrice } from '../../pricing/model-price';

/**
 * The price a budget counts a request at, under budgets.unpriced: the model's own; for a model without one,
 * refused (refuse), none (allow: nothing reserved or counted), or another model's price (price_as). A budget that
 * the choice of model could bypass would not be a budget, hence refuse by default.
 */
export class BudgetPricing {
  /** price_as: the stand-in's price under each provider that prices it, the first such provider's as a fallback. */
  private readonly standIn: { model: string; fallback: ModelPrice } | undefined;

  constructor(private readonly prices: PriceLookup, private readonly policy: BudgetPolicy['unpriced'], providers: ProviderLookup) {
    if (typeof policy !== 'object') return;
    const model = policy.price_as;
    const fallback = providers.list().map((p) => prices.lookup(p.slug, model)).find((p) => p !== undefined);
    if (!fallback) throw new Error(`budgets.unpriced.price_as: no deployed provider has a price for model "${model}"; name a model of the price catalog or of pricing.models`);
    this.standIn = { model, fallback };
  }

  /**
   * The price to reserve and settle the request at (standIn: another model's, price_as); undefined when nothing
   * is counted (allow, or an endpoint whose cost is not counted). Throws model_unpriced under refuse.
   */
  of(ctx: GatewayContext): { price: ModelPrice; standIn: boolean } | undefined {
    if (!ctx.provider || !ctx.model || !ctx.endpoint?.costCounted) return undefined;
    const own = this.prices.lookup(ctx.provider.slug, ctx.model);
    if (own) return { price: own, standIn: false };
    if (this.standIn) return { price: this.prices.lookup(ctx.provider.slug, this.standIn.model) ?? this.standIn.fallback, standIn: true };
    if (this.policy === 'allow') return undefined;
    const slug = ctx.provider.slug;
    throw new GatewayError(
      'model_unpriced',
      `Model "${ctx.model.slice(0, 200)}" of provider ${slug} has no price, so the budgets of this workspace cannot count it. ` +
        `Give it a price in gateway.config.yaml (pricing.models: [{ provider: ${slug}, model: "<model>", input: "<USD per 1M>", output: "<USD per 1M>" }]), ` +
        'or set budgets.unpriced to price_as: <a priced model> or allow.',
      { param: 'model' },
    );
  }
}
