/**
 * The gateway's Prometheus metrics (GET /metrics on the admin listener). This module loads prom-client: the runtime
 * requires it only when metrics.enabled is true. Requests are counted by an observer at the end of the plugin
 * pipeline (onComplete, off the request path); the store and Redis gauges are read when Prometheus scrapes.
 * Every label is bounded: providers, endpoints, status classes and error codes by what the gateway knows, workspaces
 * by the config, models by the price catalog's entries (and metrics.models_max), tag values by the configured ones and
 * those with the most spend (metrics.tag_values_max): never by what a client sends first.
 * The list with their labels: docs/operations.md#metrics.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { tagLabelName, type MetricsConfig } from '../../config/schema';
import type { GatewayContext } from '../../core/context';
import type { ErrorCode } from '../../core/errors';
import type { GatewayPlugin } from '../../core/plugin-contract';
import type { RequestCostService } from '../../contracts/services';
import { UNTAGGED } from '../../records/dimensions';
import type { WriteQueueStats } from '../../storage/write-queue';
import { BoundedLabel, OTHER } from './bounded-labels';
import { watchBudgets, type BudgetReadings } from './budget-metrics';
import { recordedCost } from './recorded-cost';
import { watchReconciliation, type ReconciliationReading } from './reconciliation-metrics';
import { scrapedGauge } from './scraped-gauge';
import { FixedHistogram } from './fixed-histogram';
import { GenAiMetrics } from './genai-metrics';
import { RequestFlowMetrics } from './request-flow-metrics';
import { SeriesTable } from './series-table';
import { TagValueLabels } from './tag-value-labels';

/** The label value when a request has no such thing (no provider resolved, no workspace: refused early). */
const NONE = 'none';

/** Refusals by the limit plugins (and by the limit store's fail-closed policy). */
const LIMIT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'rate_limited',
  'concurrency_limited',
  'budget_exceeded',
  'spend_anomaly_frozen',
  'max_tokens_exceeded',
  'limits_unavailable',
  'budget_unavailable',
]);

/** Gateway overhead: most requests spend well under a millisecond in the gateway itself. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Upstream time to first byte: from a fast embedding to a long non-streamed reasoning answer. */
const TTFB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** What one series of the usage counters holds: tokens by type, the known cost, the answers of unknown cost. */
interface UsageValues {
  input: number;
  cache_read: number;
  cache_write: number;
  output: number;
  costUsd: number;
  unpriced: number;
}
const TOKEN_TYPES = ['input', 'cache_read', 'cache_write', 'output'] as const;
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly models: BoundedLabel;
  private readonly workspaces: BoundedLabel;
  private readonly budgetsMax: number;
  /** Durations, in-flight requests, open streams and upstream status codes (./request-flow-metrics.ts). */
  readonly flow: RequestFlowMetrics;
  private readonly genAi: GenAiMetrics;
  private readonly tagKeys: readonly { key: string; values: TagValueLabels }[];

  /** Counted per request in plain maps, read by the counters when scraped (./series-table.ts). */
  private readonly requestRows = new SeriesTable<{ n: number }>(
    ['provider', 'model', 'endpoint', 'status_class', 'workspace'],
    () => ({ n: 0 }),
  );
  private readonly usageRows: SeriesTable<UsageValues>;

  private readonly errors: Counter;
  private readonly limitRefusals: Counter;
  private readonly adminErrors: Counter;
  private readonly overhead: FixedHistogram;
  private readonly ttfb: FixedHistogram;

  constructor(
    config: MetricsConfig,
    private readonly prices: RequestCostService,
  ) {
    this.models = new BoundedLabel(config.models_max);
    this.workspaces = new BoundedLabel(config.workspaces_max);
    this.budgetsMax = config.budgets_max;
    this.tagKeys = config.tag_keys.map((key) => ({
      key,
      values: new TagValueLabels(config.tag_values[key] ?? [], config.tag_values_max, config.tag_values_refresh_ms),
    }));
    const usageLabels = ['provider', 'model', 'workspace', ...config.tag_keys.map(tagLabelName)];
    const usageRows = (this.usageRows = new SeriesTable<UsageValues>(usageLabels, () => ({
      input: 0,
      cache_read: 0,
      cache_write: 0,
      output: 0,
      costUsd: 0,
      unpriced: 0,
    })));
    const requestRows = this.requestRows;
    const registers = [this.registry];
    registerRequestCounter(registers, requestRows);
    this.errors = new Counter({
      name: 'tollgate_errors_total',
      help: 'Requests answered with a gateway error, by its code and workspace.',
      labelNames: ['code', 'workspace'],
      registers,
    });
    this.limitRefusals = new Counter({
      name: 'tollgate_limit_refusals_total',
      help: 'Requests refused by a limit (rate, concurrency, budget, max_tokens, or the limit store unavailable), by error code and workspace.',
      labelNames: ['code', 'workspace'],
      registers,
    });
    this.adminErrors = new Counter({
      name: 'tollgate_admin_errors_total',
      help: 'Admin API and dashboard requests answered with an error (store_unavailable, query_timeout, unauthorized ...), by its code.',
      labelNames: ['code'],
      registers,
    });
    this.overhead = new FixedHistogram(
      'tollgate_gateway_overhead_seconds',
      "Time a proxied request spent in the gateway itself: its whole latency minus the upstream call (from sending it to the answer's last byte).",
      ['endpoint'],
      OVERHEAD_BUCKETS,
      this.registry,
    );
    this.ttfb = new FixedHistogram(
      'tollgate_upstream_ttfb_seconds',
      'From sending the upstream call to its response headers.',
      ['provider', 'model'],
      TTFB_BUCKETS,
      this.registry,
    );
    registerUsageCounters(registers, usageRows, usageLabels);
    this.flow = new RequestFlowMetrics(this.registry);
    this.genAi = new GenAiMetrics(this.registry);
    collectDefaultMetrics({ register: this.registry });
  }

  /** An admin answer with an error: every refusal is counted, by reason, the admin listener's as the proxy's. */
  adminError(code: ErrorCode): void {
    this.adminErrors.inc({ code });
  }

  /**
   * The observer the runtime adds to the pipeline. It has no admission hook, so its onComplete sees every request,
   * refused ones too; last in the pipeline, its onResponse runs first, so every relayed stream is seen opening.
   */
  observer(): GatewayPlugin {
    return { name: 'metrics', onResponse: (ctx) => this.flow.started(ctx), onComplete: (ctx) => this.observe(ctx) };
  }

  observe(ctx: GatewayContext): void {
    const provider = ctx.provider?.slug ?? NONE;
    const model = this.modelLabel(ctx, ctx.provider?.slug);
    const endpoint = ctx.endpoint?.key ?? NONE;
    const workspace = ctx.workspace === undefined ? NONE : this.workspaces.of(ctx.workspace.id);
    const status = ctx.status ?? ctx.error?.status ?? 500;
    const statusClass = STATUS_CLASSES[Math.floor(status / 100)] ?? OTHER;
    this.requestRows.row([provider, model, endpoint, statusClass, workspace]).n++;
    this.flow.completed(ctx, [provider, endpoint, workspace]); // provider, endpoint, workspace
    if (ctx.provider) this.genAi.observe(ctx, provider, model);
    const code = ctx.error?.code;
    if (code !== undefined) {
      this.errors.inc({ code, workspace });
      if (LIMIT_CODES.has(code)) this.limitRefusals.inc({ code, workspace });
    }
    const sent = ctx.upstreamSentMs;
    if (sent !== undefined) {
      if (ctx.ttfbMs !== undefined) this.ttfb.observe([provider, model], (ctx.ttfbMs - sent) / 1000);
      if (ctx.upstreamDoneMs !== undefined)
        this.overhead.observe([endpoint], Math.max(0, ctx.latencyMs - (ctx.upstreamDoneMs - sent)) / 1000);
    }
    const u = ctx.usage;
    if (!u) return;
    const cost = recordedCost(ctx, this.prices)!;
    const labelValues = [provider, model, workspace];
    for (const t of this.tagKeys) {
      const value = ctx.tags[t.key];
      // "(untagged)" takes none of the labels
      labelValues.push(value === undefined ? UNTAGGED : t.values.of(value, cost.usd ?? 0));
    }
    const row = this.usageRows.row(labelValues);
    row.input += u.inputTokens ?? 0;
    row.cache_read += u.cacheReadTokens ?? 0;
    row.cache_write += (u.cacheWriteTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
    row.output += u.outputTokens ?? 0;
    if (cost.usd !== null) row.costUsd += cost.usd;
    else if (cost.provenance === 'unpriced') row.unpriced++;
  }

  /** The usage recorder's write queue: depth, spill and quarantine, read at each scrape. */
  watchWriteQueue(stats: () => WriteQueueStats): void {
    const registers = [this.registry];
    scrapedGauge(
      this.registry,
      'tollgate_store_queue_depth',
      'Usage records waiting in memory to be written to the store.',
      () => stats().inMemory,
    );
    scrapedGauge(
      this.registry,
      'tollgate_store_spill_bytes',
      'Bytes of usage records in the spill file, waiting for the store to take them.',
      () => stats().spillBytes,
    );
    scrapedGauge(
      this.registry,
      'tollgate_store_writes_failing',
      '1 while the usage store refuses writes (a full disk, a read-only file or server), else 0.',
      () => (stats().writesRefused === null ? 0 : 1),
    );
    scrapedGauge(
      this.registry,
      'tollgate_store_spill_held_records',
      'Usage records kept in memory because no spill file (nor storage.spill_fallback) can be written.',
      () => stats().spillHeld,
    );
    monotonic(
      'tollgate_store_spill_dropped_records_total',
      'Usage records lost: no spill file could be written and the records held in memory reached their bound.',
      () => stats().spillDropped,
      registers,
    );
    monotonic(
      'tollgate_store_quarantined_records_total',
      'Usage records the store refused for their content, quarantined (since this process started).',
      () => stats().quarantined,
      registers,
    );
    monotonic(
      'tollgate_store_write_failures_total',
      'Failed or timed-out batch writes to the usage store (each is retried).',
      () => stats().failures,
      registers,
    );
  }

  /** Spent, limit and forecast of the budgets closest to their limit, read at each scrape (./budget-metrics.ts). */
  watchBudgets(readings: BudgetReadings): void {
    watchBudgets(this.registry, readings, this.budgetsMax);
  }

  /** Each provider's drift against its bill, from its newest reconciliation, read at each scrape. */
  watchReconciliation(read: () => Promise<ReconciliationReading[]>, providers: readonly string[]): void {
    watchReconciliation(this.registry, read, providers);
  }

  /** Whether the Redis limit store is connected, read at each scrape. */
  watchRedis(connected: () => boolean): void {
    new Gauge({
      name: 'tollgate_redis_up',
      help: '1 while the Redis limit store is connected and answering, else 0.',
      registers: [this.registry],
      aggregator: 'min', // several workers: up only when every one of them is connected
      collect() {
        this.set(connected() ? 1 : 0);
      },
    });
  }

  /** Request-body bytes held in memory by the requests in flight (server.max_buffered_bytes), read at each scrape. */
  watchBufferedBodies(held: () => number): void {
    scrapedGauge(
      this.registry,
      'tollgate_buffered_request_bytes',
      'Request-body bytes held in memory by the requests in flight (reserved against server.max_buffered_bytes).',
      () => held(),
    );
  }

  /** Alerts delivered and failed delivery attempts per channel (alerts.channels), read at each scrape. */
  watchAlerts(counts: () => ReadonlyMap<string, { sent: number; failed: number }>): void {
    const counter = (name: string, help: string, read: (c: { sent: number; failed: number }) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['channel'],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [channel, c] of counts()) this.inc({ channel }, read(c));
        },
      });
    counter('tollgate_alerts_sent_total', 'Alerts delivered to their channel.', (c) => c.sent);
    counter('tollgate_alerts_failed_total', 'Alert delivery attempts that failed (each is retried).', (c) => c.failed);
  }

  /** The freezes in force (read at each scrape) and the spend-anomaly episodes per rule since start. */
  watchAnomalies(activeFreezes: () => number, fired: ReadonlyMap<string, number>): void {
    new Gauge({
      name: 'tollgate_spend_freezes_active',
      help: 'Workspaces, keys and tag values frozen after a spend anomaly, as this instance last read them.',
      registers: [this.registry],
      collect() {
        this.set(activeFreezes());
      },
    });
    new Counter({
      name: 'tollgate_spend_anomalies_total',
      help: 'Spend-anomaly episodes this instance saw start, per rule of alerts.anomalies.',
      labelNames: ['rule'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [rule, n] of fired) this.inc({ rule }, n);
      },
    });
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  private modelLabel(ctx: GatewayContext, provider: string | undefined): string {
    const model = ctx.usage?.servedModel ?? ctx.model;
    if (model === undefined) return NONE;
    // The catalog entry's own name: a made-up dated or aliased name the catalog prices as a model is that model.
    const entry = provider === undefined ? undefined : this.prices.prices.lookup(provider, model)?.model;
    if (entry === undefined) return OTHER;
    return this.models.of(`${provider}\u0000${entry}`) === OTHER ? OTHER : entry;
  }
}

/** A counter whose value is kept elsewhere (a stats object), copied into it at each scrape. */
function monotonic(name: string, help: string, read: () => number, registers: Registry[]): void {
  new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/** tollgate_requests_total, read from the per-request counts when scraped. */
function registerRequestCounter(registers: Registry[], requestRows: SeriesTable<{ n: number }>): void {
  new Counter({
    name: 'tollgate_requests_total',
    help: 'Requests that reached the proxy, by provider, model ("other": unpriced or beyond metrics.models_max), endpoint, status class and workspace.',
    labelNames: ['provider', 'model', 'endpoint', 'status_class', 'workspace'],
    registers,
    collect() {
      this.reset();
      for (const { labels, values } of requestRows.entries()) this.inc(labels, values.n);
    },
  });
}

/** Tokens, known cost and unpriced answers, read from the per-request usage counts when scraped. */
function registerUsageCounters(
  registers: Registry[],
  usageRows: SeriesTable<UsageValues>,
  usageLabels: string[],
): void {
  new Counter({
    name: 'tollgate_tokens_total',
    help: 'Tokens as recorded (reported by the provider, or estimated), by type: input (at the normal rate), cache_read, cache_write, output.',
    labelNames: [...usageLabels, 'type'],
    registers,
    collect() {
      this.reset();
      for (const { labels, values } of usageRows.entries())
        for (const type of TOKEN_TYPES) if (values[type] > 0) this.inc({ ...labels, type }, values[type]);
    },
  });
  new Counter({
    name: 'tollgate_cost_usd_total',
    help: 'Known cost in USD, as recorded (requests whose cost is unknown are counted in tollgate_unpriced_requests_total).',
    labelNames: usageLabels,
    registers,
    collect() {
      this.reset();
      for (const { labels, values } of usageRows.entries()) if (values.costUsd > 0) this.inc(labels, values.costUsd);
    },
  });
  new Counter({
    name: 'tollgate_unpriced_requests_total',
    help: 'Answered requests whose cost is unknown (no price for the model): missing from tollgate_cost_usd_total, never counted as $0.',
    labelNames: ['provider', 'workspace'],
    registers,
    collect() {
      this.reset();
      for (const { labels, values } of usageRows.entries())
        if (values.unpriced > 0) this.inc({ provider: labels.provider, workspace: labels.workspace }, values.unpriced);
    },
  });
}
