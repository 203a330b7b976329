/**
 * Looks at every budget on a timer, off the request path: it reads the budgets' spend (the same list as GET
 * /api/budgets, from the limit store every instance shares), samples it for the forecasts, and raises the alerts
 * whose condition holds: each threshold of alert_at reached, and a forecast over the limit. Raising is idempotent
 * (the alert id names the budget, its period and what fired), so every instance may evaluate: each alert is
 * stored, and sent, once.
 */
import type { Logger } from 'pino';
import type { BudgetReads, BudgetStatus } from '../contracts/services';
import type { AlertInput } from './alert';
import { forecastAlert, thresholdAlerts } from './budget-alerts';
import type { BurnRates } from './forecast';

export interface BudgetList {
  list(now: number, reads?: BudgetReads): Promise<BudgetStatus[]>;
}

export class BudgetEvaluator {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastWarning = 0;
  /** Where the spend recorded this period is read: a reader thread when one is given, else the usage store. */
  reader: BudgetReads | undefined;

  constructor(
    private readonly budgets: BudgetList,
    private readonly burn: BurnRates,
    private readonly raise: (alerts: readonly AlertInput[]) => Promise<void>,
    private readonly everyMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.stopped) return;
      this.running ??= this.evaluate(Date.now())
        .catch((err) => this.warn(err))
        .finally(() => (this.running = undefined));
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** One look at every budget. */
  async evaluate(now: number): Promise<void> {
    const statuses = await this.budgets.list(now, this.reader);
    this.burn.observe(statuses, now);
    const raised: AlertInput[] = [];
    for (const b of statuses) {
      const forecast = this.burn.forecast(b, now);
      raised.push(...thresholdAlerts(b, forecast));
      const f = forecastAlert(b, forecast);
      if (f) raised.push(f);
    }
    if (raised.length > 0) await this.raise(raised);
  }

  private warn(err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < 60_000) return;
    this.lastWarning = now;
    this.log.warn({ err }, 'budget alerts: evaluation failed, trying again at the next one');
  }
}
