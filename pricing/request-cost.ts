import type { GatewayContext } from '../core/context';
import type { PriceLookup, RequestCostService } from '../core/services';
import { priceUsage, type PricedUsage } from './cost';

/**
 * The cost of a request, computed once from its settled usage and shared by everyone who needs it (the cost
 * header, the usage recorder, budgets). Recomputed only if the usage object was replaced (stream settle).
 */
export class RequestCost implements RequestCostService {
  private readonly memo = new WeakMap<GatewayContext, { usage: unknown; priced: PricedUsage }>();

  constructor(readonly prices: PriceLookup) {}

  of(ctx: GatewayContext): PricedUsage {
    const hit = this.memo.get(ctx);
    if (hit && hit.usage === ctx.usage) return hit.priced;
    const model = ctx.usage?.servedModel ?? ctx.model;
    const price = ctx.provider && model ? this.prices.lookup(ctx.provider.slug, model) : undefined;
    const endpoint = ctx.endpoint;
    const priced = endpoint
      ? priceUsage(price, ctx.usage, { endpoint: endpoint.key, counted: endpoint.costCounted })
      : { costPico: null, provenanceHint: 'unpriced' as const };
    this.memo.set(ctx, { usage: ctx.usage, priced });
    return priced;
  }
}
