/** The usage view's overview cards: totals of the range, each against the previous period of the same length. */
import type { Totals } from './api.js';
import { h } from './dom.js';
import { change, int, money, pct } from './format.js';
import { costText, discountPico, pico } from './usage-columns.js';

/** A previous period with fewer requests than this is too little to compare with: its deltas show "n/a". */
const MIN_PREVIOUS_REQUESTS = 20;
const NOT_COMPARABLE = { text: 'n/a', dir: 'none' } as const;
/** A period whose cost is unknown (every request unpriced or not counted) has no cost to compare, not $0. */
const COST_UNKNOWN = { text: 'n/a', dir: 'none' } as const;

/** The cost at list price beside the effective one, when a negotiated discount took something off. */
function listPriceNote(t: Totals): Node[] {
  if (t.list_cost_pico === null || t.list_cost_pico === t.cost_pico) return [];
  const unlisted = t.list_cost_unknown_count ? ` (${int(t.list_cost_unknown_count)} without a list cost)` : '';
  return [
    h(
      'span',
      { class: 'muted', dataset: { listCost: t.list_cost_usd ?? '', discount: t.discount_usd ?? '' } },
      `${money(t.list_cost_pico)} at list price · ${money(discountPico(t))} discount${unlisted}`,
    ),
  ];
}

function card(
  metric: string,
  title: string,
  value: { text: string; exact: string },
  delta: ReturnType<typeof change>,
  vsLabel: string,
  sub: (Node | string)[] = [],
): HTMLElement {
  return h(
    'div',
    { class: 'card', dataset: { metric, value: value.exact } },
    h('div', { class: 'card-title' }, title),
    h('div', { class: 'card-value' }, value.text),
    h(
      'div',
      {
        class: 'card-sub',
        dataset: { delta: delta.text },
        title:
          delta === NOT_COMPARABLE
            ? `The previous ${vsLabel} holds fewer than ${MIN_PREVIOUS_REQUESTS} requests: too little to compare with`
            : delta === COST_UNKNOWN
              ? 'The cost of this or the previous period is unknown (its requests are unpriced or not counted), not $0'
              : undefined,
      },
      delta.text
        ? h(
            'span',
            { class: `delta ${delta.dir}` },
            delta.dir === 'up' ? '▲ ' : delta.dir === 'down' ? '▼ ' : '',
            delta.text,
          )
        : null,
      delta.text ? ` vs previous ${vsLabel}` : h('span', { class: 'muted' }, 'nothing in the previous period'),
      sub.length ? h('br') : null,
      ...sub,
    ),
  );
}

export function overviewCards(t: Totals, p: Totals, label: string): HTMLElement[] {
  const vs = (cur: number, prev: number): ReturnType<typeof change> =>
    p.requests < MIN_PREVIOUS_REQUESTS && (cur > 0 || prev > 0) ? NOT_COMPARABLE : change(cur, prev);
  const flagged = t.estimated_count + t.unpriced_count;
  const flaggedPrev = p.estimated_count + p.unpriced_count;
  const costNum = Number(pico(t));
  const costPrev = Number(pico(p));
  const unknown = (x: Totals) => x.requests > 0 && x.cost_pico === null;
  const costDelta = unknown(t) || unknown(p) ? COST_UNKNOWN : vs(costNum, costPrev);
  const shareCard = h(
    'div',
    {
      class: 'card',
      dataset: {
        metric: 'flagged',
        value: String(flagged),
        estimated: String(t.estimated_count),
        unpriced: String(t.unpriced_count),
      },
    },
    h('div', { class: 'card-title' }, 'Estimated or unpriced'),
    h('div', { class: 'card-value' }, pct(flagged, t.requests)),
    h(
      'div',
      { class: 'card-sub' },
      `${int(t.estimated_count)} estimated · ${int(t.unpriced_count)} unpriced`,
      h('br'),
      h(
        'span',
        { class: 'muted' },
        p.requests >= MIN_PREVIOUS_REQUESTS
          ? `previous ${label}: ${pct(flaggedPrev, p.requests)}`
          : `previous ${label}: n/a (too little data)`,
      ),
    ),
  );
  return [
    card('cost', 'Total cost', { text: costText(t), exact: t.cost_usd ?? '' }, costDelta, label, [
      ...(t.unpriced_count ? [h('span', { class: 'warn' }, `+ ${int(t.unpriced_count)} unpriced (cost unknown)`)] : []),
      ...(t.not_counted_count ? [h('span', { class: 'warn' }, `+ ${int(t.not_counted_count)} not counted`)] : []),
      ...listPriceNote(t),
    ]),
    card(
      'requests',
      'Requests',
      { text: int(t.requests), exact: String(t.requests) },
      vs(t.requests, p.requests),
      label,
      t.error_count ? [h('span', { class: 'muted' }, `${int(t.error_count)} failed`)] : [],
    ),
    card(
      'input_tokens',
      'Input tokens',
      { text: int(t.input_tokens), exact: String(t.input_tokens) },
      vs(t.input_tokens, p.input_tokens),
      label,
      t.cache_read_tokens ? [h('span', { class: 'muted' }, `+ ${int(t.cache_read_tokens)} from cache`)] : [],
    ),
    card(
      'output_tokens',
      'Output tokens',
      { text: int(t.output_tokens), exact: String(t.output_tokens) },
      vs(t.output_tokens, p.output_tokens),
      label,
      t.reasoning_tokens ? [h('span', { class: 'muted' }, `${int(t.reasoning_tokens)} reasoning`)] : [],
    ),
    shareCard,
  ];
}
