/**
 * Delivers the outbox, one loop per channel, never on a request's path. Each turn claims the channel's oldest
 * undelivered alert (AlertOutbox.claimNext: due, and held by no other instance), sends it, and marks it sent or due
 * again after a back-off that doubles per attempt (the receiver's Retry-After when longer). The next alert of that
 * channel waits until this one is delivered: a receiver that was down gets every alert afterwards, in order. The
 * claim is a lease: an instance that dies mid-send leaves the alert to the others once it lapses.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/alerts';
import type { AlertOutbox, OutboxRow } from '../storage/alert-outbox';
import type { Alert } from './alert';
import type { AlertChannel } from './channels';

/** Retry-After beyond this is read as this: a receiver cannot park alerts for days. */
const RETRY_AFTER_MAX_MS = 3_600_000;

export interface DeliveryCounts {
  sent: number;
  failed: number;
}

export class Dispatcher {
  /** Identifies this instance's claims. */
  private readonly owner = randomUUID();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;
  private lastWarning = 0;
  readonly counts = new Map<string, DeliveryCounts>();

  constructor(
    private readonly outbox: AlertOutbox,
    private readonly channels: readonly AlertChannel[],
    private readonly delivery: AlertsConfig['delivery'],
    private readonly log: Logger,
  ) {
    for (const c of channels) this.counts.set(c.name, { sent: 0, failed: 0 });
  }

  start(): void {
    for (const c of this.channels) this.schedule(c, 0);
  }

  /** New alerts are waiting: every idle channel looks now. */
  kick(): void {
    for (const c of this.channels) if (!this.running.has(c.name)) this.schedule(c, 0);
  }

  /** Stops the loops; an attempt under way is waited for (at most its time limit), so its outcome is stored. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.all(this.running.values());
  }

  private schedule(c: AlertChannel, delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timers.get(c.name));
    const timer = setTimeout(() => {
      this.timers.delete(c.name);
      const turn = this.turn(c).finally(() => this.running.delete(c.name));
      this.running.set(c.name, turn);
    }, delayMs);
    timer.unref();
    this.timers.set(c.name, timer);
  }

  /** One alert of one channel, or a look at an empty queue; then the next turn is scheduled. */
  private async turn(c: AlertChannel): Promise<void> {
    let next = this.delivery.poll_ms;
    try {
      const now = Date.now();
      // Long enough for the attempt and for marking it: only an instance that died leaves it held this long.
      const row = await this.outbox.claimNext(c.name, this.owner, now, now + 2 * this.delivery.timeout_ms + 5000);
      if (row) next = await this.deliver(c, row);
    } catch (err) {
      this.warn({ err, channel: c.name }, 'alert outbox unavailable: retrying');
    }
    this.schedule(c, next);
  }

  /** Sends one claimed alert; the delay before the channel's next turn. */
  private async deliver(c: AlertChannel, row: OutboxRow): Promise<number> {
    const result = await c.send(JSON.parse(row.body) as Alert, this.delivery.timeout_ms);
    const counts = this.counts.get(c.name)!;
    if (result.ok) {
      await this.outbox.markSent(row.seq, this.owner, Date.now());
      counts.sent++;
      return 0;
    }
    counts.failed++;
    const backoff = Math.min(this.delivery.max_backoff_ms, this.delivery.backoff_ms * 2 ** Math.min(row.attempts, 30));
    const delay = Math.max(backoff, Math.min(result.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS));
    await this.outbox.markFailed(row.seq, this.owner, Date.now() + delay, result.error ?? 'failed');
    this.warn(
      { channel: c.name, alertId: row.alertId, attempt: row.attempts + 1, error: result.error, retryInMs: delay },
      'alert not delivered: retrying later',
    );
    return Math.min(delay, this.delivery.poll_ms);
  }

  private warn(fields: object, message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.log.warn(fields, message);
  }
}
