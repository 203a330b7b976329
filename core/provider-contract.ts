import type { EndpointKey, UsageParser } from './usage';

/** What kind of API a provider is (informational, shown in the catalog and docs). */
export const PROVIDER_FAMILIES = ['chat-completions', 'messages', 'search', 'aggregator'] as const;
export type ProviderFamily = (typeof PROVIDER_FAMILIES)[number];

/**
 * Where a provider accepts the client's own key (bring-your-own; forwarded verbatim, never stored): the
 * request headers that may carry it, lower-case, in order of preference. Empty for servers without auth.
 */
export interface AuthScheme {
  headers: readonly string[];
}

/** Authorization: Bearer <key>. */
export const bearer = (): AuthScheme => ({ headers: ['authorization'] });
/** A key header such as x-api-key, optionally with alternatives the provider also accepts. */
export const apiKeyHeader = (header: string, ...alternatives: string[]): AuthScheme => ({
  headers: [header, ...alternatives].map((h) => h.toLowerCase()),
});
/** Self-hosted servers without auth (vLLM, Ollama). */
export const noAuth = (): AuthScheme => ({ headers: [] });

/** How a header carrying a key is written, for error messages. */
export function describeAuthHeader(header: string): string {
  return header === 'authorization' ? 'Authorization: Bearer <key>' : `${header}: <key>`;
}

/**
 * A provider module: data plus a usage parser. The core never branches on a slug; everything a provider
 * does differently is declared here.
 */
export interface ProviderModule {
  /** Slug used in X-Gateway-Provider, in YAML (providers.<slug>) and in usage records. */
  slug: string;
  /** The plugin API version this module was written against (PLUGIN_API_VERSION); a mismatch stops start-up. */
  apiVersion?: string;
  displayName: string;
  /** What kind of API it is (informational, shown in the catalog and docs). */
  family: ProviderFamily;
  /** Default base URL including the version segment; YAML providers.<slug>.base_url overrides it. */
  baseUrl: string;
  /** Model-name prefixes routed here by default. Longest prefix wins across providers. */
  modelPrefixes: readonly string[];
  auth: AuthScheme;
  /** Endpoints the provider serves. A request for any other endpoint is refused with endpoint_not_supported. */
  endpoints: readonly EndpointKey[];
  /**
   * Endpoints whose path alone routes to this provider (/v1/messages always goes to the messages-style
   * provider, whatever the model). At most one enabled provider may claim a given endpoint.
   */
  ownsEndpoints?: readonly EndpointKey[];
  /** Upstream path per endpoint when it differs from the gateway path minus /v1. */
  paths?: Partial<Record<EndpointKey, string>>;
  /**
   * The body field that limits output tokens, per endpoint: the gateway sets it to the workspace's cap when a
   * request names none (limits.max_tokens_when_absent: cap). An endpoint left out uses its wire format's field:
   * max_tokens on chat completions and messages, max_output_tokens on responses.
   */
  outputLimitFields?: Partial<Record<EndpointKey, string>>;
  /** Reads usage from this provider's JSON bodies and SSE streams. */
  usage: UsageParser;
  /**
   * Prices of the provider's models, written as gateway.config.yaml's pricing.models entries without `provider`
   * (USD per 1M tokens, e.g. `{ model: 'acme-large', input: '2', output: '6' }`), checked at start-up. They apply
   * under every slug the module is deployed as, above the bundled catalog; the deployment's pricing block wins.
   */
  prices?: readonly ProviderModelPrice[];
  /**
   * Counts tokens when an answer reported none (a stream without usage, a stream cut short). Default: tiktoken by
   * model name (providers/tokenizer.ts).
   */
  tokenizer?: Tokenizer;
}

/** Estimates usage the provider did not report; the record is then marked estimated. */
export interface Tokenizer {
  /** The input tokens a request body will be billed for. */
  requestInputTokens(endpoint: EndpointKey, body: unknown, model: string): number;
  /** A counter for the text generated in one answer (its work per answer stays bounded). */
  textCounter(model: string): (text: string) => number;
}

/**
 * One model's prices in a provider module: a pricing.models entry without `provider` (the deployed slug is used).
 * The loader checks each field against the pricing schema at start-up, naming the module and the field.
 */
export interface ProviderModelPrice {
  readonly model: string;
  readonly [field: string]: unknown;
}

/** A provider as deployed: the module plus its YAML overrides. */
export interface ProviderInstance extends ProviderModule {
  tokenizer: Tokenizer;
  /** Upstream time-outs in ms (per provider overrides of the global ones). */
  timeouts: UpstreamTimeouts;
}

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

/** Identity helper that type-checks a provider module written in code. */
export function defineProvider(module: ProviderModule): ProviderModule {
  return module;
}
