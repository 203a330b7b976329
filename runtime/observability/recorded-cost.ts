import type { GatewayContext } from '../../core/context';
import type { RequestCostService } from '../../contracts/services';
import type { CostProvenance } from '../../records/usage-record';
import { provenanceOf } from '../../plugins/usage-recorder/record';

/**
 * A request's cost as the usage recorder stores it, for the metrics and the trace: the same provenance, and a cost
 * only where the record has one (none for a failed request; audio and images are not counted; unknown when the
 * model has no price). USD as a float: exact sums stay the store's (pico-USD, admin API).
 */
export function recordedCost(
  ctx: GatewayContext,
  cost: RequestCostService,
): { usd: number | null; provenance: CostProvenance } | undefined {
  if (!ctx.usage) return undefined;
  const priced = cost.of(ctx);
  const provenance = provenanceOf(ctx, priced);
  const counted = provenance !== 'failed' && provenance !== 'not_counted' && priced.costPico !== null;
  return { usd: counted ? Number(priced.costPico) / 1e12 : null, provenance };
}
