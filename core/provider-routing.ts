import type { EndpointSpec } from './endpoints';
import { GatewayError } from './errors';
import type { ProviderInstance } from './provider-contract';
import { truncate } from './truncate';
import type { EndpointKey } from './usage';

/**
 * The deployed providers and how a request finds its provider, in order:
 * 1. X-Gateway-Provider always wins; 2. a path owned by one provider (/v1/messages; /v1/batches, which names no model);
 * 3. the longest matching model-name prefix; 4. otherwise the request fails.
 */
export class ProviderRegistry {
  private readonly bySlug = new Map<string, ProviderInstance>();
  /** [prefix, provider], longest prefix first. */
  private readonly prefixIndex: [string, ProviderInstance][] = [];
  private readonly owners = new Map<EndpointKey, ProviderInstance>();

  constructor(instances: readonly ProviderInstance[]) {
    const prefixOwner = new Map<string, string>();
    for (const p of instances) {
      this.bySlug.set(p.slug, p);
      for (const prefix of p.modelPrefixes) {
        const other = prefixOwner.get(prefix);
        if (other) throw new Error(`model prefix "${prefix}" is claimed by both providers ${other} and ${p.slug}`);
        prefixOwner.set(prefix, p.slug);
        this.prefixIndex.push([prefix, p]);
      }
      for (const e of p.ownsEndpoints ?? []) {
        const other = this.owners.get(e);
        if (other) throw new Error(`endpoint ${e} is owned by both providers ${other.slug} and ${p.slug}`);
        this.owners.set(e, p);
      }
    }
    this.prefixIndex.sort((a, b) => b[0].length - a[0].length);
  }

  get(slug: string): ProviderInstance | undefined {
    return this.bySlug.get(slug);
  }

  list(): ProviderInstance[] {
    return [...this.bySlug.values()];
  }

  /** The provider whose prefix matches the model (longest prefix), if any. */
  byModel(model: string): ProviderInstance | undefined {
    for (const [prefix, p] of this.prefixIndex) if (model.startsWith(prefix)) return p;
    return undefined;
  }

  /** Picks the provider for a request, or throws the gateway error that tells the client what to do. */
  resolve(endpoint: EndpointSpec, explicitSlug: string | undefined, model: string | undefined): ProviderInstance {
    if (explicitSlug !== undefined) {
      const p = this.bySlug.get(explicitSlug.trim().toLowerCase());
      if (!p) {
        throw new GatewayError(
          'provider_unknown',
          `Unknown provider "${truncate(explicitSlug, 64)}" in X-Gateway-Provider. Known providers: ${[...this.bySlug.keys()].join(', ')}.`,
          { param: 'X-Gateway-Provider' },
        );
      }
      return supporting(p, endpoint);
    }
    const owner = this.owners.get(endpoint.key);
    if (owner) {
      if (endpoint.modelField === undefined) return owner; // files and batches name no model
      if (model === undefined) throw missingModel();
      if (!owner.modelPrefixes.some((prefix) => model.startsWith(prefix))) {
        throw new GatewayError(
          'model_provider_mismatch',
          `${endpoint.path} is served by ${owner.displayName}; model "${truncate(model, 100)}" must begin with ${owner.modelPrefixes.map((x) => `"${x}"`).join(' or ')}. Send X-Gateway-Provider to use another provider.`,
          { param: 'model' },
        );
      }
      return owner;
    }
    if (model === undefined) throw missingModel();
    const p = this.byModel(model);
    if (!p) {
      throw new GatewayError(
        'provider_not_determined',
        `Cannot determine the provider for model "${truncate(model, 100)}". Send the X-Gateway-Provider header (one of: ${[...this.bySlug.keys()].join(', ')}) or use a model name with a known prefix.`,
        { param: 'model' },
      );
    }
    return supporting(p, endpoint);
  }
}

function supporting(p: ProviderInstance, endpoint: EndpointSpec): ProviderInstance {
  if (!p.endpoints.includes(endpoint.key)) {
    throw new GatewayError(
      'endpoint_not_supported',
      `Provider ${p.slug} does not serve ${endpoint.method} ${endpoint.path}.`,
    );
  }
  return p;
}

function missingModel(): GatewayError {
  return new GatewayError('model_missing', 'The request body has no "model" field; the gateway routes by model name.', {
    param: 'model',
  });
}
