import { GatewayError, type BudgetPolicy, type GatewayContext, type PriceLookup, type ProviderLookup } from '../../api';
import type { WorstCase } from './worst-case-bound';

/** A model's catalog entry, as the price lookup gives it. */
export type ModelPrice = NonNullable<ReturnType<PriceLookup['lookup']>>;

/** What a budget counts a request at: the catalog entry, and the model to price as when it is a stand-in's. */
export interface BudgetPrice {
  price: ModelPrice;
  /** price_as: the stand-in model and the provider pricing it (the request's own model has no price). */
  standIn?: { provider: string; model: string };
}

/**
 * The price a budget counts a request at, under budgets.unpriced: the model's own; for a model without one,
 * refused (refuse), none (allow: nothing reserved or counted), or another model's price (price_as). A budget that
 * the choice of model could bypass would not be a budget, hence refuse by default.
 */
export class BudgetPricing {
  /** price_as: the stand-in model, checked at start to have a price under some deployed provider. */
  private readonly standIn: string | undefined;

  constructor(
    private readonly prices: PriceLookup,
    private readonly policy: BudgetPolicy['unpriced'],
    private readonly providers: ProviderLookup,
  ) {
    if (typeof policy !== 'object') return;
    if (!this.standInOf(undefined, policy.price_as)) {
      throw new Error(
        `budgets.unpriced.price_as: no deployed provider has a price for model "${policy.price_as}"; name a model of the price catalog or of pricing.models`,
      );
    }
    this.standIn = policy.price_as;
  }

  /**
   * What to reserve and settle the request at (audio and images too, by their media price); undefined when nothing
   * is counted (allow, or a request without a model). Throws model_unpriced under refuse.
   */
  of(ctx: GatewayContext): BudgetPrice | undefined {
    // Models lists cost nothing; a batch's requests are counted when its results pass through, not when it is sent.
    if (!ctx.provider || !ctx.endpoint || ctx.endpoint.key === 'models' || ctx.endpoint.batch) return undefined;
    // A provider named by header may be sent a request without a model, and bill it at a model of its choosing.
    if (!ctx.model)
      return this.refuseUnless(
        `The request names no model, so the budgets of this workspace cannot price it.`,
        'model',
      );
    const own = this.prices.lookup(ctx.provider.slug, ctx.model);
    if (own) return { price: own };
    if (this.standIn) {
      const standIn = this.standInOf(ctx.provider.slug, this.standIn)!;
      return { price: standIn.price, standIn: { provider: standIn.provider, model: this.standIn } };
    }
    if (this.policy === 'allow') return undefined;
    const slug = ctx.provider.slug;
    const rates = ctx.endpoint.costCounted
      ? 'input: "<USD per 1M>", output: "<USD per 1M>"'
      : 'per_second, per_character or per_image: "<USD>", or token rates';
    throw new GatewayError(
      'model_unpriced',
      `Model "${ctx.model.slice(0, 200)}" of provider ${slug} has no price, so the budgets of this workspace cannot count it. ` +
        `Give it a price in gateway.config.yaml (pricing.models: [{ provider: ${slug}, model: "<model>", ${rates} }]), ` +
        'or set budgets.unpriced to price_as: <a priced model> or allow.',
      { param: 'model' },
    );
  }

  /**
   * The amount to reserve for a request's worst case; one the budget cannot bound is refused (403 model_unpriced,
   * naming why) unless budgets.unpriced is allow, which reserves nothing for it.
   */
  reservation(ctx: GatewayContext, worst: WorstCase): bigint {
    if ('pico' in worst) return worst.pico;
    const model = ctx.model ? `"${ctx.model.slice(0, 200)}"` : 'the model';
    return (
      this.refuseUnless(
        `The cost of this request to ${model} cannot be bounded (${worst.unbounded.slice(0, 200)}), so the budgets of this workspace cannot count it. ` +
          'Send fields the price lists, give the model a price in gateway.config.yaml (pricing.models), or set budgets.unpriced to allow.',
        worst.param,
      ) ?? 0n
    );
  }

  /** Refuses with model_unpriced, except under allow (nothing reserved or counted). */
  private refuseUnless(message: string, param: string | null): undefined {
    if (this.policy === 'allow') return undefined;
    throw new GatewayError('model_unpriced', message, { param });
  }

  /** The stand-in's price under the request's provider, else under the first deployed provider that prices it. */
  private standInOf(slug: string | undefined, model: string): { provider: string; price: ModelPrice } | undefined {
    for (const provider of [...(slug === undefined ? [] : [slug]), ...this.providers.list().map((p) => p.slug)]) {
      const price = this.prices.lookup(provider, model);
      if (price) return { provider, price };
    }
    return undefined;
  }
}
