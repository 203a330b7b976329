/**
 * Metrics of a multi-core gateway (server.workers > 1). Every worker serves the admin port, and counts only its
 * own requests: a scrape answered by one worker would see counters jump back and forth between workers, which
 * Prometheus reads as resets. So a worker asks the primary, which gathers every worker's metrics through
 * prom-client's AggregatorRegistry (over the cluster's IPC channel) and sums them (gauges per their aggregator:
 * tollgate_redis_up is the minimum). Loaded only when metrics are on.
 *
 * A gather that does not complete (a worker stopped, or too busy to answer within prom-client's 5 s) answers
 * 503 metrics_unavailable with Retry-After: the next scrape may well succeed, and a 500 would read as a bug. The
 * primary says so once on stderr when gathers start failing, and once when they succeed again.
 */
import cluster from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { MetricsScrape } from '../../admin/metrics-route';
import { GatewayError } from '../../core/errors';
import type { GatewayMetrics } from './metrics';

const ASK = 'tollgate:metrics-ask';
const ANSWER = 'tollgate:metrics-answer';
/** Longer than prom-client's own 5 s wait for the workers, so its error is the one reported. */
const ANSWER_TIMEOUT_MS = 6000;
/** Seconds a scraper is asked to wait: about the gather's own wait, after which a stopped worker is waited for anew. */
const RETRY_AFTER_S = 5;

const unavailable = (why: string) =>
  new GatewayError(
    'metrics_unavailable',
    `The metrics of every worker could not be gathered (${why}); try again shortly`,
    {
      headers: { 'retry-after': String(RETRY_AFTER_S) },
    },
  );

interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  contentType?: string;
  error?: string;
  /** The error is prom-client's time-out: a worker did not answer (retryable), not a failure of the metrics. */
  timedOut?: boolean;
}
/** How prom-client's AggregatorRegistry rejects when a worker has not answered within its 5 s. */
const TIMED_OUT = 'Operation timed out.';

/** How this process answers a scrape: its own registry, or in a worker, the sum over all workers. */
export function metricsScrape(metrics: GatewayMetrics): () => Promise<MetricsScrape> {
  if (!cluster.isWorker) return () => metrics.scrape();
  // The worker side of prom-client's aggregation: answers the primary with this registry's metrics.
  AggregatorRegistry.setRegistries([metrics.registry]);
  void new AggregatorRegistry();
  let next = 0;
  const waiting = new Map<number, (answer: Answer) => void>();
  process.on('message', (message: Answer) => {
    if (message?.type === ANSWER) waiting.get(message.id)?.(message);
  });
  return () =>
    new Promise<MetricsScrape>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(unavailable(`the primary process did not answer within ${ANSWER_TIMEOUT_MS} ms`));
      }, ANSWER_TIMEOUT_MS);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (answer.timedOut) reject(unavailable('a worker did not answer within 5 s'));
        else if (answer.error !== undefined || answer.text === undefined)
          reject(new Error(`gathering the workers' metrics failed: ${answer.error}`));
        else
          resolve({ text: answer.text, contentType: answer.contentType ?? 'text/plain; version=0.0.4; charset=utf-8' });
      });
      process.send!({ type: ASK, id });
    });
}

/** In the primary: gathers and sums the workers' metrics whenever one of them is scraped. */
export function serveWorkerMetrics(write: (line: string) => void): void {
  const aggregator = new AggregatorRegistry();
  let failing = false;
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== ASK) return;
    const reply = (answer: Omit<Answer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer });
    };
    aggregator.clusterMetrics().then(
      (text) => {
        if (failing) write('tollgate: every worker answers the metrics gather again; /metrics answers 200\n');
        failing = false;
        reply({ text, contentType: aggregator.contentType });
      },
      (err: Error) => {
        const timedOut = err.message === TIMED_OUT;
        if (timedOut && !failing)
          write(
            'tollgate: warning: a worker did not answer the metrics gather within 5 s; /metrics answers 503 until every worker does\n',
          );
        failing ||= timedOut;
        reply({ error: err.message, timedOut });
      },
    );
  });
}
