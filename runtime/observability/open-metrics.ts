import type { MetricsScrape } from '../../admin/metrics-route';
import type { MetricsConfig } from '../../config/schema';
import type { RequestCostService } from '../../contracts/services';
import type { GatewayMetrics } from './metrics';

/** The gateway's metrics when metrics.enabled, else undefined: prom-client is loaded only when they are on. */
export function openMetrics(config: MetricsConfig, cost: RequestCostService): GatewayMetrics | undefined {
  if (!config.enabled) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when metrics are on
  const { GatewayMetrics } = require('./metrics') as typeof import('./metrics');
  return new GatewayMetrics(config, cost);
}

/** How this process answers a scrape: from its own metrics, or in a multi-core worker, summed over every worker. */
export function metricsScrapeOf(metrics: GatewayMetrics): () => Promise<MetricsScrape> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when metrics are on
  return (require('./cluster-metrics') as typeof import('./cluster-metrics')).metricsScrape(metrics);
}

/** In the primary of a multi-core gateway with metrics on: answers the workers' scrapes with every worker's sum. */
export function serveWorkerMetrics(config: MetricsConfig, write: (line: string) => void): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when metrics are on
  if (config.enabled) (require('./cluster-metrics') as typeof import('./cluster-metrics')).serveWorkerMetrics(write);
}
