import Router from '@koa/router';
import type { Logger } from 'pino';
import { GatewayError, type ErrorCode } from '../core/errors';

export const METRICS_PATH = '/metrics';

/** What a scrape answers: the exposition text and its content type. */
export interface MetricsScrape {
  contentType: string;
  text: string;
}

/** The admin listener's view of the metrics (runtime/observability/metrics.ts) and of who may read them. */
export interface AdminMetrics {
  scrape(): Promise<MetricsScrape>;
  /** metrics.auth: none: served without any token. */
  open: boolean;
  /** metrics.token: a scrape-only token, accepted on GET /metrics besides the admin token. */
  token?: string;
  /** Counts an admin answer with an error, by its code (tollgate_admin_errors_total). */
  errorAnswered(code: ErrorCode): void;
}

/**
 * GET (and HEAD) /metrics. Mounted before the token check when the metrics are open, after it otherwise. A scrape
 * of a multi-core gateway whose workers did not all answer in time is 503 metrics_unavailable with Retry-After (the
 * primary logs that once); any other failure is a 500 internal_error, logged here. Both in the gateway's error shape.
 */
export function metricsRoutes(metrics: AdminMetrics, logger: Logger): Router {
  const router = new Router();
  router.get(METRICS_PATH, async (ctx) => {
    ctx.set('cache-control', 'no-store');
    try {
      const { contentType, text } = await metrics.scrape();
      ctx.set('content-type', contentType);
      ctx.body = text;
    } catch (err) {
      const retryable = err instanceof GatewayError && err.code === 'metrics_unavailable';
      if (!retryable) logger.error({ err }, 'metrics scrape failed');
      const error = retryable
        ? err
        : new GatewayError('internal_error', 'The metrics could not be gathered; details are in the gateway log.');
      metrics.errorAnswered(error.code);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.type = 'application/json';
      ctx.body = error.toBody();
    }
  });
  return router;
}
