/** What GET /readyz reports: produced by runtime/observability/readiness.ts, documented by the admin OpenAPI. */
export interface ReadinessChecks {
  store: 'ok' | 'failed';
  limit_store: 'ok' | 'failed' | 'not_configured';
  shutdown: 'ok' | 'draining';
}

export type ReadinessCheck = keyof ReadinessChecks;

export interface ReadinessReport {
  /** No check that fails readiness failed: the instance should get traffic. */
  ready: boolean;
  checks: ReadinessChecks;
  /** The failed checks that fail readiness, in the order of `checks`. */
  failed: ReadinessCheck[];
  /** The failed checks that do not fail readiness: the instance serves on without them. */
  degraded: ReadinessCheck[];
}
