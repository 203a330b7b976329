import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** Hop-by-hop headers (RFC 9110 7.6.1) and headers the HTTP client recomputes; never forwarded either way. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

/** Upstream response headers that must not be copied to the client as they are (Node sets framing itself). */
const RESPONSE_HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'trailer',
  'te',
]);

/** Names listed in a Connection header are hop-by-hop too. */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  // The usual values name nothing beyond the hop-by-hop set: no Set is built for them on every request.
  if (!value || value === 'keep-alive' || value === 'close' || value === 'Keep-Alive' || value === 'Close')
    return undefined;
  const tokens = (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  return tokens.length ? new Set(tokens) : undefined;
}

/**
 * Copies request headers for the upstream, leaving out hop-by-hop headers and `exclude` (the provider auth
 * headers, which the core adds back after the plugins ran). Values are copied verbatim.
 */
export function forwardableRequestHeaders(
  headers: IncomingHttpHeaders,
  into: Record<string, string | string[]>,
  exclude: readonly string[],
): void {
  const listed = connectionTokens(headers.connection);
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || exclude.includes(name) || listed?.has(name)) continue;
    const v = headers[name];
    if (v !== undefined) into[name] = v;
  }
}

/**
 * The headers of the upstream call: the plugins' edited copy, without any X-Gateway-* header (whatever the
 * plugin list, the provider never sees the gateway's own headers, its key among them) and without any credential
 * header a plugin may have added (the client's own key is added by the caller).
 */
export function upstreamHeadersOf(
  edited: Record<string, string | string[]>,
  credentialHeaders: readonly string[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const name in edited) {
    const lower = name.toLowerCase(); // a plugin may have added a header in any case
    if (lower.startsWith('x-gateway-') || credentialHeaders.includes(lower)) continue;
    headers[name] = edited[name];
  }
  return headers;
}

/** Upstream response headers to send to the client: everything but hop-by-hop framing. */
export function forwardableResponseHeaders(
  headers: Record<string, string | string[] | undefined>,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const listed = connectionTokens(headers.connection);
  for (const name in headers) {
    if (RESPONSE_HOP_BY_HOP.has(name) || listed?.has(name)) continue;
    const v = headers[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** First value of a header from undici's or Node's header objects. */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
