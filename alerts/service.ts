/**
 * The alerting service: `raise` is the one entry point for any part of the gateway (budget thresholds and
 * forecasts here; other detectors through the same call). A raised alert is stored in the outbox once per channel
 * (a repeat of the same alert id is ignored) and delivered by the dispatcher in the background. With no channel
 * configured alerts are only logged.
 */
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/alerts';
import type { AlertOutbox, OutboxRow } from '../storage/alert-outbox';
import { completeAlert, type Alert, type AlertInput } from './alert';
import { openChannel, type AlertChannel } from './channels';
import { Dispatcher, type DeliveryCounts } from './dispatcher';
import { BudgetEvaluator, type BudgetList } from './evaluator';
import { BurnRates, type Forecast } from './forecast';
import type { PostResult } from './post-json';
import { sendTestAlert } from './test-alert';

/** Alert ids this instance stored or logged; beyond it the set starts again (a repeat is then ignored by the store). */
const MAX_REMEMBERED = 10_000;

export class AlertService {
  readonly channels: readonly AlertChannel[];
  private readonly dispatcher: Dispatcher | undefined;
  private readonly evaluator: BudgetEvaluator;
  private readonly burn: BurnRates;
  private readonly raised = new Set<string>();

  constructor(
    private readonly config: AlertsConfig,
    private readonly outbox: AlertOutbox | undefined,
    budgets: BudgetList,
    private readonly log: Logger,
  ) {
    this.channels = config.channels.map(openChannel);
    if (outbox && this.channels.length > 0)
      this.dispatcher = new Dispatcher(outbox, this.channels, config.delivery, log);
    this.burn = new BurnRates(config.forecast.window_ms, config.forecast.min_elapsed_ms);
    this.evaluator = new BudgetEvaluator(budgets, this.burn, (a) => this.raise(...a), config.evaluate_every_ms, log);
  }

  start(): void {
    this.dispatcher?.start();
    this.evaluator.start();
  }

  /** Budgets are read through `reader` from now on (the admin API's reader thread: off the event loop). */
  readThrough(reader: BudgetEvaluator['reader']): void {
    this.evaluator.reader = reader;
  }

  async stop(): Promise<void> {
    await this.evaluator.stop();
    await this.dispatcher?.stop();
  }

  /** Stores alerts for every channel (each alert id once) and wakes the delivery. */
  async raise(...inputs: AlertInput[]): Promise<void> {
    const now = Date.now();
    let added = 0;
    for (const input of inputs) {
      const alert = completeAlert(input, now, this.config.dashboard_url);
      if (this.raised.has(alert.alert_id)) continue;
      if (this.outbox && this.channels.length > 0)
        added += await this.outbox.enqueue(
          {
            alertId: alert.alert_id,
            kind: alert.kind,
            workspace: alert.workspace,
            createdAt: now,
            body: JSON.stringify(alert),
          },
          this.channels.map((c) => c.name),
        );
      else this.log.warn({ alertId: alert.alert_id, kind: alert.kind, workspace: alert.workspace }, alert.title);
      if (this.raised.size >= MAX_REMEMBERED) this.raised.clear();
      this.raised.add(alert.alert_id);
    }
    if (added > 0) this.dispatcher?.kick();
  }

  /** A budget's forecast from this instance's samples; null until it has been watched long enough. */
  forecastOf(
    b: { key: string; spentPico: bigint; limitPico: bigint; periodEnd: number },
    now: number,
  ): Forecast | null {
    return this.burn.forecast(b, now);
  }

  /** Sends a test alert to one channel at once, outside the outbox; undefined when there is no such channel. */
  async test(channelName: string): Promise<{ alert: Alert; result: PostResult } | undefined> {
    const channel = this.channels.find((c) => c.name === channelName);
    return channel && sendTestAlert(channel, this.config);
  }

  /** The alert history, newest first. */
  history(limit: number, beforeSeq: number | null): Promise<OutboxRow[]> {
    return this.outbox ? this.outbox.list(limit, beforeSeq) : Promise.resolve([]);
  }

  /** Alerts sent and failed attempts, per channel, since start (for Prometheus). */
  deliveryCounts(): ReadonlyMap<string, DeliveryCounts> {
    return this.dispatcher?.counts ?? new Map();
  }
}
