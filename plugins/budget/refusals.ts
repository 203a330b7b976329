import { formatUsd, GatewayError, type BudgetState } from '../../api';
import type { Applied, StatusBase } from './active-budgets';

export const PERIOD_ADJECTIVE = { day: 'daily', month: 'monthly' } as const;

/** A read for the admin API: the limit store being down is a 503, not an internal error. */
export async function readLimitStore<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch {
    throw new GatewayError(
      'limits_unavailable',
      'Budgets cannot be read right now (limit store unavailable); try again shortly.',
      { headers: { 'retry-after': '1' } },
    );
  }
}

export function whose(status: StatusBase): string {
  return status.scope === 'workspace'
    ? `workspace ${status.workspace}`
    : `${status.scope} in workspace ${status.workspace}`;
}

/** 429 naming the first budget the reservation does not fit, with Retry-After until its period ends. */
export function refusal(
  applied: Applied[],
  states: readonly BudgetState[],
  amountPico: bigint,
  now: number,
): GatewayError {
  const i = states.findIndex((s) => s.spentPico + s.reservedPico + amountPico > s.limitPico);
  const { status } = applied[i];
  return new GatewayError(
    'budget_exceeded',
    `The ${PERIOD_ADJECTIVE[status.period]} budget of $${formatUsd(status.limitPico)} for ${whose(status)} does not cover this request: ` +
      `$${formatUsd(states[i].spentPico)} spent, $${formatUsd(states[i].reservedPico)} reserved by open requests, this one may cost up to $${formatUsd(amountPico)}.`,
    { headers: { 'retry-after': String(Math.max(1, Math.ceil((status.periodEnd - now) / 1000))) } },
  );
}

/** 503 for a budget whose spend this period cannot be read in time, under on_error closed. */
export function spendUnavailable(status: StatusBase): GatewayError {
  return new GatewayError(
    'budget_unavailable',
    `The spend of the ${PERIOD_ADJECTIVE[status.period]} budget for ${whose(status)} cannot be read right now (usage store unavailable); try again shortly.`,
    { headers: { 'retry-after': '1' } },
  );
}
