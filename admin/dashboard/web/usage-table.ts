/** The usage view's table of groups: sortable columns, the "other" row, the total, and the pager of the API's pages. */
import type { GroupRow, Totals, UsageResponse } from './api.js';
import { PALETTE } from './chart.js';
import { addFilter, dimLabel, type AppCtx } from './context.js';
import { h } from './dom.js';
import { int } from './format.js';
import { shownValue, valueTitle } from './key-names.js';
import { COLUMNS } from './usage-columns.js';

/** Filter value of a built-in group whose value is absent (storage NONE). */
const NONE = '(none)';

let sortBy: { key: string; dir: 1 | -1 } = { key: 'cost_usd', dir: -1 };

export const groupValue = (r: GroupRow, dim: string): string => r.group[dim] ?? NONE;

/**
 * `colors`: group value -> palette index of its series in the chart (the rest are "other"). `other`: the groups the
 * API left out of its page, summed, shown as the last line of the body (never sorted among the groups).
 */
export interface TableData {
  rows: GroupRow[];
  total: Totals;
  colors: Map<string, number>;
  other: (Totals & { groups: number }) | null;
}

export function groupTable(
  ctx: AppCtx,
  dim: string,
  { rows, total, colors, other }: TableData,
  rerender: () => void,
): HTMLElement {
  if (rows.length === 0)
    return h(
      'div',
      { class: 'empty-inline' },
      'No requests in this range',
      ctx.state.filters.length ? ' with these filters' : '',
      other ? ' match the search' : '',
      '.',
    );
  const cols = COLUMNS.filter((c) => !c.optional || rows.some((r) => c.sort(r, total) !== 0n));
  const body = sortRows(rows, dim, cols, total).map((r) => groupRow(ctx, dim, { row: r, cols, total, colors }));
  if (other) body.push(otherRow(other, cols, total));
  const foot = h(
    'tr',
    { class: 'total' },
    h('td', { dataset: { col: 'group' } }, 'Total'),
    cols.map((c) =>
      h('td', { class: 'num', dataset: { col: c.key, value: c.value(total, total) } }, c.show(total, total)),
    ),
  );
  return h(
    'table',
    { class: 'grid', id: 'groups' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        sortableHeader('group', dimLabel(dim), rerender),
        cols.map((c) => sortableHeader(c.key, c.label, rerender, c.title)),
      ),
    ),
    h('tbody', {}, body),
    h('tfoot', {}, foot),
  );
}

type Column = (typeof COLUMNS)[number];

/** The rows in the chosen order; ties (and the group column itself) go by the shown name. */
function sortRows(rows: GroupRow[], dim: string, cols: Column[], total: Totals): GroupRow[] {
  const groupSort = (a: GroupRow, b: GroupRow) =>
    shownValue(dim, groupValue(a, dim)).localeCompare(shownValue(dim, groupValue(b, dim)));
  return [...rows].sort((a, b) => {
    if (sortBy.key === 'group') return groupSort(a, b) * sortBy.dir;
    const col = cols.find((c) => c.key === sortBy.key) ?? cols.find((c) => c.key === 'cost_usd')!;
    const x = col.sort(a, total);
    const y = col.sort(b, total);
    return (x === y ? groupSort(a, b) : x < y ? -1 : 1) * sortBy.dir;
  });
}

/** A column head that sorts by its column; a second click turns the order round. */
function sortableHeader(key: string, label: string, rerender: () => void, title?: string): HTMLElement {
  const active = sortBy.key === key;
  return h(
    'th',
    {
      class: `sortable${key === 'group' ? '' : ' num'}`,
      dataset: { col: key },
      title,
      'aria-sort': active ? (sortBy.dir === 1 ? 'ascending' : 'descending') : 'none',
    },
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          sortBy = active ? { key, dir: sortBy.dir === 1 ? -1 : 1 } : { key, dir: key === 'group' ? 1 : -1 };
          rerender();
        },
      },
      label,
      h('span', { class: 'sort-mark' }, active ? (sortBy.dir === 1 ? ' ▲' : ' ▼') : ''),
    ),
  );
}

/** One group's line: its chart colour, its name (the id on hover), its numbers; a click filters by it. */
function groupRow(
  ctx: AppCtx,
  dim: string,
  { row, cols, total, colors }: { row: GroupRow; cols: Column[]; total: Totals; colors: Map<string, number> },
): HTMLElement {
  const value = groupValue(row, dim);
  const tr = h(
    'tr',
    {
      class: 'clickable',
      tabindex: 0,
      dataset: { group: value },
      title: `Filter by ${dimLabel(dim)} = ${shownValue(dim, value)}`,
    },
    h(
      'td',
      { dataset: { col: 'group', value }, title: valueTitle(dim, value) },
      h('span', { class: `swatch ${colors.has(value) ? `c${colors.get(value)! % PALETTE.length}` : 'c-other'}` }),
      shownValue(dim, value),
    ),
    cols.map((c) =>
      h(
        'td',
        {
          class: 'num',
          dataset: { col: c.key, value: c.value(row, total) },
          title: c.key === 'cost_usd' && row.cost_usd !== null ? `$${row.cost_usd}` : undefined,
        },
        c.show(row, total),
      ),
    ),
  );
  tr.addEventListener('click', () => addFilter(ctx, dim, value));
  tr.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') addFilter(ctx, dim, value);
  });
  return tr;
}

/** The groups the API left out of its page, summed: the last line of the body, never sorted among the groups. */
function otherRow(other: Totals & { groups: number }, cols: Column[], total: Totals): HTMLElement {
  return h(
    'tr',
    { class: 'other', dataset: { group: '(other)', groups: String(other.groups) } },
    h(
      'td',
      { dataset: { col: 'group' } },
      h('span', { class: 'swatch c-other' }),
      `${other.groups} other ${other.groups === 1 ? 'group' : 'groups'}`,
    ),
    cols.map((c) =>
      h('td', { class: 'num', dataset: { col: c.key, value: c.value(other, total) } }, c.show(other, total)),
    ),
  );
}

/** "6,000 groups by customer_id (the 100 most expensive, then the others together)", or the search's count. */
export function tableTitleText(dim: string, page: UsageResponse, all: number): string {
  const groups = (n: number) => `${int(n)} ${n === 1 ? 'group' : 'groups'}`;
  if (page.search) return `${groups(page.groups)} of ${int(all)} by ${dimLabel(dim)} match "${page.search}"`;
  const first = page.offset === 0 ? 'most expensive' : `next most expensive from rank ${int(page.offset + 1)}`;
  return `${groups(all)} by ${dimLabel(dim)}${page.other ? ` (the ${page.rows.length} ${first}, then the others together)` : ''}`;
}

/** Previous / next page of groups, and where this page is in the ranking. */
export function pagerControls(page: UsageResponse, go: (offset: number) => void): HTMLElement[] {
  if (page.offset === 0 && page.next_offset === null) return [];
  const start = page.offset + 1;
  const end = page.offset + new Set(page.rows.map((r) => JSON.stringify(r.group))).size;
  return [
    h(
      'button',
      {
        type: 'button',
        class: 'btn small',
        id: 'groups-prev',
        disabled: page.offset === 0,
        onclick: () => go(Math.max(0, page.offset - page.limit)),
      },
      '‹ Previous',
    ),
    h('span', { class: 'muted small', id: 'groups-range' }, `${int(start)}–${int(end)} of ${int(page.groups)}`),
    h(
      'button',
      {
        type: 'button',
        class: 'btn small',
        id: 'groups-next',
        disabled: page.next_offset === null,
        onclick: () => go(page.next_offset ?? 0),
      },
      'Next ›',
    ),
  ];
}
