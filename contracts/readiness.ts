/** What GET /readyz reports: produced by runtime/observability/readiness.ts, documented by the admin OpenAPI. */
export interface ReadinessChecks {
  store: 'ok' | 'failed';
  limit_store: 'ok' | 'failed' | 'not_configured';
  shutdown: 'ok' | 'draining';
}

export interface ReadinessReport {
  ready: boolean;
  checks: ReadinessChecks;
  /** The names of the checks that failed, in the order of `checks`. */
  failed: (keyof ReadinessChecks)[];
}
