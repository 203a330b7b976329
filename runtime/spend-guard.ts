/**
 * The spend freezes and anomaly counters on the request path, as a pipeline member of the gateway's own (not in the
 * YAML list, so no plugin list can leave it out): beforeUpstream refuses a frozen workspace, key or tag value from
 * memory, after auth and attribution and before any limit takes a token; onComplete adds the request's recorded
 * cost to the anomaly counters. Neither reads or writes a store.
 */
import type { AnomalyWatch } from '../alerts/anomaly-watch';
import type { RequestCostService } from '../contracts/services';
import { GatewayError } from '../core/errors';
import type { GatewayPlugin } from '../core/plugin-contract';
import type { SpendFreezes } from '../services/spend-freezes';
import { recordedCost } from './observability/recorded-cost';

export function spendGuard(
  freezes: SpendFreezes | undefined,
  watch: AnomalyWatch,
  cost: RequestCostService,
): GatewayPlugin {
  const guard: GatewayPlugin = {
    name: 'spend-guard',
    beforeUpstream(ctx) {
      if (!freezes || !ctx.workspace) return;
      const f = freezes.frozen(ctx.workspace.id, ctx.keyId, ctx.tags);
      if (!f) return;
      const now = Date.now();
      const until =
        f.expiresAt === null ? 'until an operator lifts it' : `until ${new Date(f.expiresAt).toISOString()}`;
      throw new GatewayError(
        'spend_anomaly_frozen',
        `Requests of ${f.scope} in workspace ${ctx.workspace.id} are frozen after a spend anomaly (${f.reason}), ${until}. An operator lifts it with: tollgate freezes lift ${f.id}`,
        f.expiresAt === null
          ? {}
          : { headers: { 'retry-after': String(Math.max(1, Math.ceil((f.expiresAt - now) / 1000))) } },
      );
    },
  };
  // Without anomaly rules no request pays for an onComplete.
  if (!watch.active) return guard;
  return {
    ...guard,
    onComplete(ctx) {
      if (!ctx.workspace) return;
      const usd = recordedCost(ctx, cost)?.usd;
      if (usd) watch.observe({ workspace: ctx.workspace.id, keyId: ctx.keyId, tags: ctx.tags, usd });
    },
  };
}
