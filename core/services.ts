import type { RequestCost } from '../pricing/request-cost';
import type { PricedUsage } from '../pricing/cost';
import type { GatewayContext } from './context';
import type { ProviderInstance } from './provider-contract';
import type { ProviderRegistry } from './provider-routing';

/**
 * The public views of the shared services a plugin may resolve from its container. They are deliberately
 * narrower than the classes behind them, so the internals can change without breaking plugins.
 */

/** TOKENS.Providers: the deployed providers. */
export interface ProviderLookup {
  get(slug: string): ProviderInstance | undefined;
  list(): ProviderInstance[];
  /** The provider the longest matching model-name prefix routes to, if any. */
  byModel(model: string): ProviderInstance | undefined;
}

/** TOKENS.RequestCost: the request's cost from its usage (computed once per request, shared by every plugin). */
export interface RequestCostService {
  /** Cost in pico-USD (1e-12 USD; format with formatUsd), or null when unknown, with where it came from. */
  of(ctx: GatewayContext): PricedUsage;
}

export type { PricedUsage };

// Compile-time proof that the services behind the tokens still offer these views (the build fails otherwise).
type Offers<Service extends View, View> = Service;
export type ServiceViewsChecked = [Offers<ProviderRegistry, ProviderLookup>, Offers<RequestCost, RequestCostService>];
