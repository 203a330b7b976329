/**
 * The store's background maintenance in a gateway process: one run at start, then one every hour.
 *
 *   PostgreSQL  always: the month partitions of usage_records for this month and the next (storage/postgres-partitions.ts),
 *               plus retention when storage.retention.records_days is set
 *   SQLite      only with retention
 *
 * The timer is on the gateway's thread; the work is the store's (UsageStore.maintain): the SQLite writer thread, a
 * PostgreSQL pool client. A run still going when the next is due is not doubled. A failed run is logged and tried
 * again at the next one.
 */
import { retentionCutoff } from './retention';
import type { MaintenanceOptions, MaintenanceResult, StorageLogger, UsageStore } from './store';

export const MAINTENANCE_INTERVAL_MS = 3_600_000;

export interface RetentionSettings {
  /** Keep records this many days (storage.retention.records_days); undefined keeps them forever. */
  recordsDays?: number;
  /** Rows per DELETE statement. */
  batchSize: number;
  /** Pause between two DELETE statements, ms. */
  pauseMs: number;
}

export class StoreMaintenance {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<MaintenanceResult | undefined> | undefined;

  constructor(
    private readonly store: UsageStore,
    private readonly settings: RetentionSettings,
    private readonly log: StorageLogger,
    private readonly intervalMs = MAINTENANCE_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether this store has anything to maintain with these settings. */
  get needed(): boolean {
    return this.store.dialect === 'postgres' || this.settings.recordsDays !== undefined;
  }

  start(): void {
    if (!this.needed || this.timer) return;
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; a run in progress is stopped at its next batch by the store's close(). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One run (the one in progress, if any); resolves with what it did, or undefined when it failed (logged). */
  runOnce(): Promise<MaintenanceResult | undefined> {
    return (this.running ??= this.run().finally(() => (this.running = undefined)));
  }

  private async run(): Promise<MaintenanceResult | undefined> {
    const now = this.now();
    const { recordsDays, batchSize, pauseMs } = this.settings;
    const opts: MaintenanceOptions = { now };
    if (recordsDays !== undefined) opts.retention = { before: retentionCutoff(now, recordsDays), batchSize, pauseMs };
    const started = performance.now();
    try {
      const result = await this.store.maintain(opts);
      const fields = {
        ...result,
        ...(opts.retention ? { recordsKeptFrom: new Date(opts.retention.before).toISOString() } : {}),
        ms: Math.round(performance.now() - started),
      };
      this.log.info(fields, 'storage maintenance');
      return result;
    } catch (err) {
      this.log.error({ err }, 'storage maintenance failed; the next run tries again');
      return undefined;
    }
  }
}
