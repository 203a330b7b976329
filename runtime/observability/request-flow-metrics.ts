/**
 * What an on-call engineer reads first: how long requests and streams take end to end, how many are in flight and
 * how many streams are open, and what status the provider itself answered with (an upstream 500 apart from a 502).
 * Durations go into fixed-bucket histograms (./fixed-histogram.ts) from the metrics observer's onComplete, off the
 * request path; the gauges are read when Prometheus scrapes.
 */
import { Counter, type Registry } from 'prom-client';
import type { GatewayContext } from '../../core/context';
import { OTHER } from './bounded-labels';
import { FixedHistogram } from './fixed-histogram';
import { scrapedGauge } from './scraped-gauge';
import { SeriesTable } from './series-table';

/** A whole non-streamed exchange: from a refusal in a millisecond to a long reasoning answer. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** A stream, from its request to its last byte: seconds for a short answer, minutes for a long one. */
const STREAM_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** The labels every duration carries; the caller gives their values in this order. */
const FLOW_LABELS = ['provider', 'endpoint', 'workspace'] as const;

export class RequestFlowMetrics {
  private readonly requestDuration: FixedHistogram;
  private readonly streamDuration: FixedHistogram;
  /** The streams being relayed now: added when their answer starts, removed when the exchange completes. */
  private readonly openStreams = new Set<GatewayContext>();
  private readonly upstreamRows = new SeriesTable<{ n: number }>(['provider', 'upstream_status'], () => ({ n: 0 }));

  constructor(private readonly registry: Registry) {
    this.requestDuration = new FixedHistogram(
      'tollgate_request_duration_seconds',
      'Whole latency of a non-streamed request (refusals and errors included), from its arrival to the last byte the client got.',
      FLOW_LABELS,
      REQUEST_BUCKETS,
      registry,
    );
    this.streamDuration = new FixedHistogram(
      'tollgate_stream_duration_seconds',
      'Whole latency of a streamed answer, from the request to the last event the client got (or the cut).',
      FLOW_LABELS,
      STREAM_BUCKETS,
      registry,
    );
    scrapedGauge(
      registry,
      'tollgate_streams_open',
      'Streamed answers being relayed to clients now.',
      () => this.openStreams.size,
    );
    const upstreamRows = this.upstreamRows;
    new Counter({
      name: 'tollgate_upstream_responses_total',
      help: "Answers from providers, by the provider's own HTTP status code (what the client got may differ: a refused answer, a cut stream).",
      labelNames: ['provider', 'upstream_status'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { labels, values } of upstreamRows.entries()) this.inc(labels, values.n);
      },
    });
  }

  /** The requests the proxy holds (read at each scrape). */
  watchInFlight(inFlight: () => number): void {
    scrapedGauge(
      this.registry,
      'tollgate_requests_in_flight',
      'Requests the gateway holds now, streams included: from their arrival until they completed.',
      inFlight,
    );
  }

  /** onResponse: a streamed answer is about to be relayed. */
  started(ctx: GatewayContext): void {
    if (ctx.stream) this.openStreams.add(ctx);
  }

  /** onComplete, with the request's bounded label values: provider, endpoint, workspace. */
  completed(ctx: GatewayContext, labelValues: readonly string[]): void {
    const seconds = ctx.latencyMs / 1000;
    if (this.openStreams.delete(ctx)) this.streamDuration.observe(labelValues, seconds);
    else this.requestDuration.observe(labelValues, seconds);
    const status = ctx.upstreamStatus;
    if (status !== undefined)
      this.upstreamRows.row([labelValues[0], status >= 100 && status <= 599 ? String(status) : OTHER]).n++;
  }
}
