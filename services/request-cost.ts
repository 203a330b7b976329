import type { GatewayContext } from '../core/context';
import type { PriceLookup, RequestCostService } from '../contracts/services';
import type { EndpointKey, Usage } from '../core/usage';
import { priceUsage, type PricedUsage } from '../pricing/cost';

/**
 * The cost of a request, computed once from its settled usage and shared by everyone who needs it (the cost
 * header, the usage recorder, budgets). Recomputed if the usage object was replaced (a stream's usage is settled
 * after its last byte), never kept while the usage is unknown.
 */
export class RequestCost implements RequestCostService {
  private readonly memo = new WeakMap<GatewayContext, { usage: unknown; priced: PricedUsage }>();

  constructor(readonly prices: PriceLookup) {}

  of(ctx: GatewayContext): PricedUsage {
    const hit = this.memo.get(ctx);
    if (hit && hit.usage === ctx.usage) return hit.priced;
    const priced = this.price(ctx, ctx.usage);
    // Kept only once usage is known: asked before a stream's usage arrived, the answer (unknown) is not kept.
    if (ctx.usage !== undefined) this.memo.set(ctx, { usage: ctx.usage, priced });
    return priced;
  }

  price(ctx: GatewayContext, usage: Usage | undefined, as?: { provider: string; model: string }): PricedUsage {
    const model = usage?.servedModel ?? ctx.model;
    const price = as
      ? this.prices.lookup(as.provider, as.model)
      : ctx.provider && model
        ? this.prices.lookup(ctx.provider.slug, model)
        : undefined;
    const endpoint = ctx.endpoint;
    if (!endpoint) return { costPico: null, provenanceHint: 'unpriced' as const };
    const priced = priceUsage(price, usage, { endpoint: endpoint.key, counted: endpoint.costCounted });
    // A dated price (pricing/dated-prices.ts): the record keeps which one it was priced with.
    const version = price && (price.effective_from || price.effective_to) ? this.prices.versionOf?.(price) : undefined;
    return version ? { ...priced, priceVersion: version } : priced;
  }

  priceAnswer(provider: string, model: string, endpoint: EndpointKey, usage: Usage | undefined): PricedUsage {
    return priceUsage(this.prices.lookup(provider, model), usage, { endpoint, counted: true });
  }
}
