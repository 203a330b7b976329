/**
 * The scheduled reconciliation, in the running gateway: once a day (from reconcile.schedule.at, UTC) each provider of
 * reconcile.providers with an admin key is reconciled over the previous reconcile.schedule.window_days UTC days, so
 * that the days a provider restated are read again. Among the instances sharing the store one runs each provider's
 * day: it claims it in the store first (storage/reconciliation-schedule.ts); a failed run is tried again after
 * retry_ms. Everything here runs on timers, off the request path: the gateway's figures (its daily totals, and for
 * OpenRouter its records) are read through the admin reader thread, and a provider that fails or hangs only fails the
 * run (its requests have time-outs).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/alerts';
import type { ReconcileConfig } from '../config/reconcile';
import type { ListRequestsQuery, UsageGroupRow, UsageQuery, UsageStore } from '../storage/store';
import { DAY_MS, utcDay } from './bill';
import { raiseDrift } from './raise-drift';
import type { GenerationPage } from './recorded-generation';
import { runReconciliation, runSettings, type BillSource } from './run';
import { apiSource } from './sources';

/** How long a claim holds before another instance may take a run whose instance died mid-way. */
const LEASE_MS = 30 * 60_000;

export interface ScheduleDeps {
  reconcile: ReconcileConfig;
  alerts: AlertsConfig;
  store: UsageStore;
  /** The gateway's daily totals, read off the proxy's thread (the admin reader thread). */
  queryUsage(q: UsageQuery): Promise<UsageGroupRow[]>;
  /**
   * Pages of the gateway's records, read off the proxy's thread too: OpenRouter is reconciled record by record
   * (at most MAX_RECORDS_PER_RUN a run). Without it OpenRouter is not scheduled.
   */
  listRequests?(q: ListRequestsQuery): Promise<GenerationPage>;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

export class ReconcileSchedule {
  private readonly owner = randomUUID();
  private readonly sources: [string, BillSource][] = [];
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<number> | undefined;
  private readonly now: () => number;

  constructor(private readonly deps: ScheduleDeps) {
    this.now = deps.now ?? Date.now;
    for (const slug of Object.keys(deps.reconcile.providers)) {
      try {
        const source = apiSource(deps.reconcile, slug, deps.env);
        if (source.kind === 'openrouter' && !deps.listRequests)
          throw new Error('openrouter is reconciled record by record, and no reader of records was given');
        this.sources.push([slug, source]);
      } catch (err) {
        deps.logger.warn({ provider: slug }, `reconcile: not scheduled: ${(err as Error).message}`);
      }
    }
  }

  /** The providers it reconciles. */
  get providers(): string[] {
    return this.sources.map(([slug]) => slug);
  }

  start(): void {
    if (this.sources.length === 0) return;
    const every = this.deps.reconcile.schedule.check_ms;
    const loop = () => {
      this.timer = setTimeout(() => void this.tick().finally(loop), every);
      this.timer.unref();
    };
    this.timer = setTimeout(() => void this.tick().finally(loop), 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  /** Runs each provider whose run of today is due and not yet done or claimed; the runs it made. */
  tick(): Promise<number> {
    return (this.ticking ??= this.runDue().finally(() => (this.ticking = undefined)));
  }

  private async runDue(): Promise<number> {
    const now = this.now();
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    const [h, m] = this.deps.reconcile.schedule.at.split(':').map(Number);
    if (now < today + (h * 60 + m) * 60_000) return 0;
    let made = 0;
    for (const [slug, source] of this.sources) {
      try {
        if (await this.runOne(slug, source, today)) made++;
      } catch (err) {
        this.deps.logger.warn({ err, provider: slug }, 'reconcile: the scheduled run could not be stored');
      }
    }
    return made;
  }

  private async runOne(slug: string, source: BillSource, today: number): Promise<boolean> {
    const { store, reconcile, logger } = this.deps;
    const schedule = store.reconciliationSchedule?.();
    const day = utcDay(today);
    const now = this.now();
    if (!schedule || !(await schedule.claim(slug, day, this.owner, now, now + LEASE_MS))) return false;
    const range = { from: today - reconcile.schedule.window_days * DAY_MS, to: today };
    const outcome = await runReconciliation(
      {
        queryUsage: this.deps.queryUsage,
        listRequests: this.deps.listRequests,
        runs: store.reconciliationRuns?.(),
        now: this.now,
      },
      source,
      range,
      runSettings(reconcile, slug),
    );
    if (!outcome.report) {
      logger.warn({ provider: slug, run: outcome.id }, `reconcile: the scheduled run failed: ${outcome.error}`);
      await schedule.finish(slug, this.owner, null, this.now() + reconcile.schedule.retry_ms);
      return true;
    }
    await schedule.finish(slug, this.owner, day, 0);
    const { drift } = outcome.report.totals;
    logger.info({ provider: slug, run: outcome.id, drift, counts: outcome.report.counts }, 'reconcile: scheduled run');
    const alert = await raiseDrift(
      this.deps.alerts,
      store.alertOutbox?.(),
      outcome.report,
      reconcile.drift_alert,
      outcome.id,
    );
    if (alert) logger.warn({ provider: slug, alert: alert.alert_id }, alert.title);
    return true;
  }
}
