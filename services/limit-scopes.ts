import type { WorkspaceLimits } from '../config/limits';
import type { GatewayContext } from '../core/context';
import type { LimitScope } from '../contracts/limit-store';
import { tagScope } from './workspace-limits';

/**
 * The scopes a request falls under: its workspace, plus one per tag that has per-tag limits and is present.
 * Callers on the request path use LimitsContext.scopesOf, which keeps the result per workspace and tag values.
 */
export function scopesOf(ctx: GatewayContext, limits: WorkspaceLimits): LimitScope[] {
  const ws = `ws:${ctx.workspace!.id}`;
  const scopes: LimitScope[] = [{ key: ws, label: `workspace ${ctx.workspace!.id}`, limits }];
  for (const [tag, tagLimits] of Object.entries(limits.per_tag ?? {})) {
    const value = ctx.tags[tag];
    if (value !== undefined)
      scopes.push({ key: `${ws}:${tagScope(tag, value)}`, label: `${tag}=${value}`, limits: tagLimits });
  }
  return scopes;
}
