/**
 * Errors the gateway raises itself. They always render in the chat-completions error shape
 * {"error": {"message", "type", "param", "code"}}, which every SDK parses; upstream errors are never
 * re-wrapped, they pass through as the provider sent them.
 */

/** What the gateway does with an error code: its status and type, whether it is expected, whether it closes. */
export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly expected?: true;
  readonly close?: 'linger' | 'now';
}

/**
 * Stable error codes: clients and dashboards may branch on these, so never rename one. `expected`: a failure of
 * status 500+ that is not logged as the gateway's own when it answers a request: the provider's state (time-outs,
 * unreachable upstreams), or logged where it arose (plugin_error, limits_unavailable, budget_unavailable, gateway_busy).
 *
 * `close`: the connection is closed after this answer. `linger`: what the client still sends of the refused body is
 * drained first, so that it reads the answer rather than a reset (core/lingering-close.ts): a body not read to its
 * end, and a request without a valid gateway key. A connection that brought no valid key gets one answer: a client
 * pipelining thousands of keyless requests would otherwise have each refused in turn, back to back on the proxy's
 * thread, holding every other tenant's request behind them (SDKs open a new connection after a close). `now`: at
 * once; the gateway is short of body memory, and reading on would take more of it (a client still sending may see
 * a reset).
 */
export const ERROR_CODES = {
  gateway_key_missing: { status: 401, type: 'authentication_error', close: 'linger' },
  gateway_key_invalid: { status: 401, type: 'authentication_error', close: 'linger' },
  provider_key_missing: { status: 401, type: 'authentication_error' },
  /** The admin API's token was missing or wrong (the proxy's own key answers gateway_key_*). */
  admin_token_invalid: { status: 401, type: 'authentication_error' },
  route_not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  provider_not_determined: { status: 400, type: 'invalid_request_error' },
  provider_unknown: { status: 400, type: 'invalid_request_error' },
  model_provider_mismatch: { status: 400, type: 'invalid_request_error' },
  endpoint_not_supported: { status: 400, type: 'invalid_request_error' },
  model_missing: { status: 400, type: 'invalid_request_error' },
  /** A model name longer than MAX_MODEL_LENGTH (intake/body.ts). */
  invalid_model: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_body: { status: 400, type: 'invalid_request_error' },
  invalid_metadata: { status: 400, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error', close: 'linger' },
  /** More request headers than the proxy reads (runtime/header-count.ts). */
  headers_too_many: { status: 431, type: 'invalid_request_error' },
  /** The request body arrived too slowly (server.body_timeout_ms, server.body_min_rate); the connection is closed. */
  body_timeout: { status: 408, type: 'invalid_request_error', close: 'linger' },
  max_tokens_exceeded: { status: 400, type: 'invalid_request_error' },
  /** The workspace caps output tokens and refuses requests that name no limit (limits.max_tokens_when_absent: reject). */
  max_tokens_required: { status: 400, type: 'invalid_request_error' },
  required_tag_missing: { status: 400, type: 'invalid_request_error' },
  /** A policy plugin refused the request (e.g. a model not allowed for the workspace); the message says why. */
  policy_denied: { status: 403, type: 'permission_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  concurrency_limited: { status: 429, type: 'rate_limit_error' },
  /** Too many invalid gateway keys from one client address (auth plugin, lockout options). */
  auth_blocked: { status: 429, type: 'rate_limit_error', close: 'linger' },
  budget_exceeded: { status: 429, type: 'rate_limit_error' },
  /** The key, tag value or workspace is frozen after a spend anomaly, until lifted or expired (docs/alerts.md). */
  spend_anomaly_frozen: { status: 429, type: 'rate_limit_error' },
  /** DELETE /api/freezes/:id with an id no freeze has. */
  freeze_not_found: { status: 404, type: 'invalid_request_error' },
  /** PATCH or DELETE /api/budgets/:id on a budget from the YAML: change it there. */
  budget_read_only: { status: 409, type: 'invalid_request_error' },
  budget_not_found: { status: 404, type: 'invalid_request_error' },
  /** A runtime budget that is not valid (a field, or an unknown workspace or key); the message says which. */
  invalid_budget: { status: 400, type: 'invalid_request_error' },
  /** A budget applies and the model has no price, so its cost can be neither reserved nor counted (budgets.unpriced). */
  model_unpriced: { status: 403, type: 'permission_error' },
  limits_unavailable: { status: 503, type: 'gateway_error', expected: true },
  /** A budget's spend this period could not be read from the usage store in time, and limit_store.on_error is closed. */
  budget_unavailable: { status: 503, type: 'gateway_error', expected: true },
  request_aborted: { status: 499, type: 'gateway_error' },
  upstream_unreachable: { status: 502, type: 'gateway_error', expected: true },
  upstream_error: { status: 502, type: 'gateway_error' },
  upstream_timeout: { status: 504, type: 'gateway_error', expected: true },
  plugin_error: { status: 500, type: 'gateway_error', expected: true },
  internal_error: { status: 500, type: 'gateway_error' },
  shutting_down: { status: 503, type: 'gateway_error' },
  /** Request bodies held in memory reached server.max_buffered_bytes: this one was refused before it was read. */
  gateway_busy: { status: 503, type: 'gateway_error', expected: true, close: 'now' },
  /** A large upload could not be written to the spool directory (disk full, not writable): server.upload_spool_dir. */
  upload_storage_failed: { status: 503, type: 'gateway_error' },
  /** The usage store could not be reached for an admin read or write (sent with Retry-After); the proxy serves on. */
  store_unavailable: { status: 503, type: 'gateway_error' },
  /** An admin query ran past admin.query_timeout_ms and was cancelled. */
  query_timeout: { status: 503, type: 'gateway_error' },
  /** An admin query needed more memory than its reader thread may use, and was stopped. */
  query_too_large: { status: 503, type: 'gateway_error' },
  /**
   * GET /metrics of a multi-core gateway: a worker did not answer the primary's gather of every worker's metrics in
   * time (sent with Retry-After); the scrape is retryable, and logged once by the primary until the workers answer.
   */
  metrics_unavailable: { status: 503, type: 'gateway_error', expected: true },
  /** An admin query's range holds more time buckets (or rows) than one answer may; the message names the limit. */
  range_too_large: { status: 400, type: 'invalid_request_error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  /** Extra response headers, e.g. Retry-After on a 429 or Allow on a 405. */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'GatewayError';
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }

  readonly param: string | null;

  /** The JSON body sent to the client. */
  toBody(): string {
    return JSON.stringify({ error: { message: this.message, type: this.type, param: this.param, code: this.code } });
  }
}

/** Anything thrown that is not a GatewayError becomes an internal error with a generic message (no leaks). */
export function asGatewayError(err: unknown, fallback: ErrorCode = 'internal_error'): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError(
    fallback,
    fallback === 'plugin_error' ? 'A gateway plugin failed while handling the request' : 'Internal gateway error',
    { cause: err },
  );
}
