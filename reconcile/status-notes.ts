/** The sentence each reconciliation line carries: what its status means with this line's own figures. */
import type { ReconciliationLine } from './report';

const usd = (amount: string | null | undefined) => (amount == null ? '?' : `$${amount}`);

export function explain(line: ReconciliationLine, discount: string | null): string {
  const g = line.gateway;
  const p = line.provider;
  switch (line.status) {
    case 'match':
      return p?.cost_usd == null
        ? 'The provider reported the same tokens and no cost for this line.'
        : `Both sides say ${usd(p.cost_usd)}.`;
    case 'within_tolerance':
      return `The provider charged ${usd(p?.cost_usd)}, the gateway recorded ${usd(g?.cost_usd)}: within the tolerance.`;
    case 'discounted':
      return `The provider charged ${usd(p?.cost_usd)}: the gateway's list cost ${usd(g?.list_cost_usd ?? g?.cost_usd)} at the account's discount of ${discount}.`;
    case 'priced_differently':
      return `Same tokens, but the provider charged ${line.ratio} times the gateway's price (${usd(p?.cost_usd)} against ${usd(g?.cost_usd)}): a stale or wrong price; a dated price override at the price the bill implies, then a reprice of the period, fixes it.`;
    case 'not_seen_by_gateway':
      return `The provider counted more tokens than the gateway received: traffic that did not go through the gateway (another key, the console, a bypass).`;
    case 'unpriced':
      return `${g?.unpriced} of the gateway's records have no price for this model, so its cost ${usd(g?.cost_usd)} leaves them out: add the model's price and reprice.`;
    case 'drift':
      return `The figures differ (${usd(p?.cost_usd)} billed, ${usd(g?.cost_usd)} recorded) and the tokens do not explain it.`;
    case 'provider_only':
      return `The provider billed ${usd(p?.cost_usd)} for a day and model the gateway has no record of.`;
    case 'gateway_only':
      return `The gateway recorded ${usd(g?.cost_usd)} that the provider has not billed.`;
    case 'not_final':
      return `Inside the restatement window: the provider may still change this day, so the difference is not final yet.`;
  }
}
