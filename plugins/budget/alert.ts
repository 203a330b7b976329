import { formatUsd, type BudgetState, type Logger } from '../../api';
import type { Applied } from './active-budgets';
import { PERIOD_ADJECTIVE } from './refusals';

/** Budget alerts remembered as logged; beyond it the set starts again (at worst an alert is logged twice). */
const MAX_ALERTS = 10_000;

/** True when spent reached share x limit (share in thousandths, as configured to at most 3 decimals). */
export function alertReached(spentPico: bigint, limitPico: bigint, share: number): boolean {
  return spentPico * 1000n >= limitPico * BigInt(Math.round(share * 1000));
}

/** Logs the alert of a budget instance once, when its spend crosses alert_at (the instance's key names the period). */
export class BudgetAlerts {
  /** Budget instances whose alert this instance has logged. */
  private readonly logged = new Set<string>();

  constructor(private readonly log: Logger) {}

  ifCrossed(applied: readonly Applied[], states: readonly BudgetState[]): void {
    for (let i = 0; i < applied.length; i++) {
      const { status } = applied[i];
      if (this.logged.has(status.key) || !alertReached(states[i].spentPico, status.limitPico, status.alertAt[0]))
        continue;
      if (this.logged.size >= MAX_ALERTS) this.logged.clear(); // bounded; at worst an alert is logged again
      this.logged.add(status.key);
      this.log.warn(
        {
          budget: status.key,
          workspace: status.workspace,
          scope: status.scope,
          spentUsd: formatUsd(states[i].spentPico),
          limitUsd: formatUsd(status.limitPico),
        },
        `budget alert: ${Math.round(status.alertAt[0] * 100)}% of the ${PERIOD_ADJECTIVE[status.period]} budget used`,
      );
    }
  }
}
