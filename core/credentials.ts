import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from './errors';
import { describeAuthHeader, type ProviderInstance } from './provider-contract';

/**
 * Headers that carry the gateway's own credentials: the gateway key and the admin token (the admin API also reads
 * it from X-Admin-Token). They never leave the gateway, whatever the provider.
 */
const GATEWAY_CREDENTIAL_HEADERS = ['x-gateway-key', 'x-admin-token'] as const;

/** Credential headers of no provider in particular, withheld even when no deployed provider declares them. */
const GENERIC_CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'proxy-authorization'] as const;

/**
 * Tells whether a credential header's value is one of the gateway's own secrets (a gateway key or the admin token),
 * which must never reach a provider even in a header the provider reads its key from.
 */
export type GatewaySecretCheck = (value: string) => boolean;

/** The one credential a request sends upstream. */
export interface ProviderCredential {
  header: string;
  value: string | string[];
}

/**
 * Which credential goes to which provider. Every provider declares its credential headers (ProviderModule.auth),
 * in order of preference. A request carries at most one credential upstream: the first of the resolved provider's
 * headers the client sent. Every other credential header (another provider's, the gateway key, the admin token,
 * a second header the same provider would accept) is withheld, so an Anthropic key sent beside an OpenAI key never
 * reaches OpenAI, nor the reverse. A value that is a gateway key or the admin token is never forwarded either, even
 * in the provider's own header (a client that put its gateway key where the provider key goes).
 */
export class UpstreamCredentials {
  /** Every header that may carry a credential: withheld from plugins' upstream headers and from the upstream call. */
  readonly withheld: readonly string[];

  constructor(
    providers: readonly ProviderInstance[],
    private readonly isGatewaySecret: GatewaySecretCheck = () => false,
  ) {
    this.withheld = [
      ...new Set<string>([
        ...GATEWAY_CREDENTIAL_HEADERS,
        ...GENERIC_CREDENTIAL_HEADERS,
        ...providers.flatMap((p) => p.auth.headers),
      ]),
    ];
  }

  /**
   * The credential to send to `provider`, or undefined for a provider without auth. Refuses with
   * provider_key_missing when the provider needs a key and none of its headers carries one that may leave.
   */
  pick(provider: ProviderInstance, headers: IncomingHttpHeaders): ProviderCredential | undefined {
    const declared = provider.auth.headers;
    if (declared.length === 0) return undefined;
    let gatewaySecretIn: string | undefined;
    for (const header of declared) {
      const value = headers[header];
      if (!value) continue;
      if (this.carriesGatewaySecret(value)) {
        gatewaySecretIn ??= header;
        continue;
      }
      return { header, value };
    }
    const forms = declared.map(describeAuthHeader).join(' or ');
    if (gatewaySecretIn !== undefined) {
      throw new GatewayError(
        'provider_key_missing',
        `The ${gatewaySecretIn === 'authorization' ? 'Authorization' : gatewaySecretIn} header carries a Tollgate credential (a gateway key or the admin token), which never leaves the gateway. ` +
          `Send your ${provider.displayName} key in the ${forms} header, and the gateway key in X-Gateway-Key.`,
      );
    }
    throw new GatewayError(
      'provider_key_missing',
      `${provider.displayName} needs your provider key in the ${forms} header. It is forwarded as is and never stored.`,
    );
  }

  private carriesGatewaySecret(value: string | string[]): boolean {
    for (const v of Array.isArray(value) ? value : [value]) {
      const bearer = /^bearer\s+(.+)$/i.exec(v)?.[1]?.trim();
      if (this.isGatewaySecret(v) || (bearer !== undefined && this.isGatewaySecret(bearer))) return true;
    }
    return false;
  }
}
