import { parseUsd, type BudgetConfig, type GatewayContext } from '../../api';
import type { Rule } from './budget-instance';

/** The usage store's dimension of a request's gateway key, used as a budget's scope for key and per_key. */
export const KEY_DIMENSION = 'key_id';

/** A budget as a workspace's limits hold it: runtime budgets (POST /api/budgets) carry their id. */
export type HeldBudget = BudgetConfig & { id?: string };

/** The value a request has for a budget's scope dimension: its gateway key's id, or a tag's value. */
export function scopeValue(ctx: GatewayContext, dimension: string): string | undefined {
  return dimension === KEY_DIMENSION ? ctx.keyId : ctx.tags[dimension];
}

/** A workspace's budgets worked out once: YAML ones first (ids yaml:<workspace>:<index>), then runtime ones. */
export function rulesFrom(workspace: string, budgets: readonly HeldBudget[], firstId: number): Rule[] {
  return budgets.map((config, i) => ({
    config,
    limitPico: parseUsd(config.usd),
    tags: config.key ? [[KEY_DIMENSION, config.key]] : Object.entries(config.tag ?? {}),
    per: config.per_key ? KEY_DIMENSION : config.per_tag,
    overrides: new Map(Object.entries(config.overrides ?? {}).map(([v, usd]) => [v, parseUsd(usd)])),
    id: firstId + i,
    budgetId: config.id ?? `yaml:${workspace}:${i}`,
    runtime: config.id !== undefined,
  }));
}
