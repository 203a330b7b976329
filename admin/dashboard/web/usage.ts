/** The usage view: overview cards, cost over time by the chosen dimension, the table of groups, CSV export. */
import { api, type GroupRow, type Totals, type UsageParams, type UsageResponse } from './api.js';
import { destroyChart, drawChart, OTHER_COLOR, PALETTE, PARTIAL_MARK, partialBuckets, type Series } from './chart.js';
import { addFilter, dimLabel, type AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { change, dateTime, int, pct } from './format.js';
import { resolveRange } from './state.js';
import { toolbar } from './toolbar.js';
import { COLUMNS, costText, pico, ZERO } from './usage-columns.js';
import { shownValue, valueTitle } from './key-names.js';

/** Filter value of a built-in group whose value is absent (storage NONE). */
const NONE = '(none)';
const TOP_N = 8;
/** Typing in the search box asks again once this long without a key stroke. */
const SEARCH_DELAY_MS = 250;
/** A previous period with fewer requests than this is too little to compare with: its deltas show "n/a". */
const MIN_PREVIOUS_REQUESTS = 20;
const NOT_COMPARABLE = { text: 'n/a', dir: 'none' } as const;

let sortBy: { key: string; dir: 1 | -1 } = { key: 'cost_usd', dir: -1 };

const groupValue = (r: GroupRow, dim: string): string => r.group[dim] ?? NONE;

export async function renderUsage(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const s = ctx.state;
  const range = resolveRange(s);
  const dim = s.groupBy;
  const base: UsageParams = { groupBy: [dim], from: range.from, to: range.to, filters: s.filters };
  const prevFrom = range.from - (range.to - range.from);

  const cards = h('section', { class: 'cards', id: 'overview' }, h('div', { class: 'card loading' }, 'Loading…'));
  const chartBox = h('div', { class: 'chart-box' }, h('canvas', { id: 'cost-chart', 'aria-label': 'Cost over time' }));
  const metricSel = h(
    'select',
    {
      id: 'chart-metric',
      'aria-label': 'Chart metric',
      onchange: () => ctx.update({ metric: metricSel.value as 'cost' | 'requests' }),
    },
    h('option', { value: 'cost', selected: s.metric === 'cost' }, 'Cost'),
    h('option', { value: 'requests', selected: s.metric === 'requests' }, 'Requests'),
  );
  const partialNote = h(
    'p',
    { class: 'muted small hidden', id: 'partial-note' },
    `${PARTIAL_MARK.trim()} paler bars: the range covers only part of that UTC ${range.interval}, so it is no dip.`,
  );
  const chartCard = h(
    'section',
    { class: 'panel' },
    h(
      'header',
      { class: 'panel-head' },
      h('h2', {}, `${s.metric === 'cost' ? 'Cost' : 'Requests'} over time by ${dimLabel(dim)}`),
      h('span', { class: 'muted small', id: 'chart-zone' }, `UTC ${range.interval === 'hour' ? 'hours' : 'days'}`),
      h('span', { class: 'spacer' }),
      metricSel,
    ),
    chartBox,
    partialNote,
  );
  const tableHost = h('div', { class: 'table-wrap' });
  const search = h('input', {
    type: 'search',
    id: 'group-search',
    placeholder: `Search ${dimLabel(dim)}`,
    'aria-label': `Search the ${dimLabel(dim)} groups`,
    autocomplete: 'off',
  });
  const pager = h('div', { class: 'pager', id: 'group-pager' });
  const exportBtn = h('button', { type: 'button', class: 'btn', id: 'export-csv', disabled: true }, 'Export CSV');
  const tableTitle = h('h2', {}, `By ${dimLabel(dim)}`);
  const tableCard = h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, tableTitle, h('span', { class: 'spacer' }), search, exportBtn),
    tableHost,
    pager,
  );

  root.dataset.from = String(range.from);
  root.dataset.to = String(range.to);
  root.dataset.groupBy = dim;
  const retention = h('p', { class: 'muted small hidden', id: 'retention-note' });
  replace(root, toolbar(ctx, { groupBy: true }), retention, cards, chartCard, tableCard);

  const [grouped, prev] = await Promise.all([
    api.usage(base),
    api.usage({ groupBy: [], from: prevFrom, to: range.from, filters: s.filters }),
  ]);
  if (!isCurrent()) return;
  // The page's own work, without the waits on the API: the cards and table, then the chart (data-draw-ms).
  let drawing = performance.now();
  const drawn = () => (root.dataset.drawMs = (performance.now() - drawing).toFixed(1));
  showUncounted(retention, [...grouped.uncounted, ...prev.uncounted], grouped.records_kept_from);

  const total = grouped.total ?? ZERO;
  const before = prev.total ?? ZERO;
  replace(cards, overviewCards(total, before, range.label));

  // Chart: the top groups by the chosen metric (their series come from /api/usage/series), the rest as "other".
  const metric = (t: Totals): bigint => (s.metric === 'cost' ? pico(t) : BigInt(t.requests));
  const ranked = [...grouped.rows].sort((a, b) => (metric(b) > metric(a) ? 1 : metric(b) < metric(a) ? -1 : 0));
  const topCount = ranked.length <= TOP_N + 1 ? ranked.length : TOP_N;
  const topValues = ranked.slice(0, topCount).map((r) => groupValue(r, dim));
  const top = new Map(topValues.map((v, i) => [v, i]));

  // The table pages through the groups (and searches them) on its own: the cards and the chart stay.
  let shown = grouped;
  const showPage = () => {
    const renderTable = () =>
      replace(
        tableHost,
        groupTable(ctx, dim, { rows: shown.rows, total, colors: top, other: shown.other }, renderTable),
      );
    renderTable();
    tableTitle.textContent = tableTitleText(dim, shown, grouped.groups);
    replace(
      pager,
      pagerControls(shown, (offset) => void loadPage(offset)),
    );
  };
  let asked = 0;
  const loadPage = async (offset: number) => {
    const mine = ++asked;
    try {
      const page = await api.usage({ ...base, offset, search: search.value.trim() });
      if (mine !== asked || !isCurrent()) return;
      shown = page;
      showPage();
    } catch (err) {
      ctx.fail(err);
    }
  };
  let typing: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => void loadPage(0), SEARCH_DELAY_MS);
  });
  showPage();

  exportBtn.disabled = grouped.rows.length === 0;
  exportBtn.onclick = async () => {
    try {
      const { text, filename } = await api.usageCsv(base);
      const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
      const a = h('a', { href: url, download: filename });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      ctx.fail(err);
    }
  };

  if (total.requests === 0) {
    destroyChart();
    chartBox.dataset.series = '[]';
    replace(
      chartBox,
      h(
        'div',
        { class: 'empty-inline' },
        'No requests in this range',
        s.filters.length ? ' with these filters' : '',
        '.',
      ),
    );
    drawn();
  } else {
    const tableMs = performance.now() - drawing;
    const series = await api.usageSeries({ ...base, interval: range.interval, values: topValues });
    if (!isCurrent()) return;
    drawing = performance.now() - tableMs;
    const pick = (x: { cost_pico: string[]; requests: number[] }) =>
      s.metric === 'cost' ? x.cost_pico.map((c) => BigInt(c)) : x.requests.map((n) => BigInt(n));
    const lines: Series[] = series.series.map((x, i) => ({
      label: shownValue(dim, x.group),
      color: PALETTE[i % PALETTE.length],
      values: pick(x),
    }));
    if (ranked.length > topCount && series.other)
      lines.push({ label: 'other', color: OTHER_COLOR, values: pick(series.other) });
    chartBox.dataset.series = JSON.stringify(lines.map((l) => l.label));
    const buckets = series.buckets.map((b) => Date.parse(b));
    const partial = partialBuckets(buckets, range.interval, range.from, range.to);
    chartBox.dataset.partial = JSON.stringify(partial);
    partialNote.classList.toggle('hidden', !partial.includes(true));
    drawChart(chartBox.querySelector('canvas')!, buckets, { interval: range.interval, partial }, lines, s.metric);
    drawn();
  }
}

function card(
  metric: string,
  title: string,
  value: string,
  exact: string,
  delta: ReturnType<typeof change>,
  vsLabel: string,
  sub: (Node | string)[] = [],
): HTMLElement {
  return h(
    'div',
    { class: 'card', dataset: { metric, value: exact } },
    h('div', { class: 'card-title' }, title),
    h('div', { class: 'card-value' }, value),
    h(
      'div',
      {
        class: 'card-sub',
        dataset: { delta: delta.text },
        title:
          delta === NOT_COMPARABLE
            ? `The previous ${vsLabel} holds fewer than ${MIN_PREVIOUS_REQUESTS} requests: too little to compare with`
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

function overviewCards(t: Totals, p: Totals, label: string): HTMLElement[] {
  const vs = (cur: number, prev: number): ReturnType<typeof change> =>
    p.requests < MIN_PREVIOUS_REQUESTS && (cur > 0 || prev > 0) ? NOT_COMPARABLE : change(cur, prev);
  const flagged = t.estimated_count + t.unpriced_count;
  const flaggedPrev = p.estimated_count + p.unpriced_count;
  const costNum = Number(pico(t));
  const costPrev = Number(pico(p));
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
    card('cost', 'Total cost', costText(t), t.cost_usd ?? '', vs(costNum, costPrev), label, [
      ...(t.unpriced_count ? [h('span', { class: 'warn' }, `+ ${int(t.unpriced_count)} unpriced (cost unknown)`)] : []),
      ...(t.not_counted_count ? [h('span', { class: 'warn' }, `+ ${int(t.not_counted_count)} not counted`)] : []),
    ]),
    card(
      'requests',
      'Requests',
      int(t.requests),
      String(t.requests),
      vs(t.requests, p.requests),
      label,
      t.error_count ? [h('span', { class: 'muted' }, `${int(t.error_count)} failed`)] : [],
    ),
    card(
      'input_tokens',
      'Input tokens',
      int(t.input_tokens),
      String(t.input_tokens),
      vs(t.input_tokens, p.input_tokens),
      label,
      t.cache_read_tokens ? [h('span', { class: 'muted' }, `+ ${int(t.cache_read_tokens)} from cache`)] : [],
    ),
    card(
      'output_tokens',
      'Output tokens',
      int(t.output_tokens),
      String(t.output_tokens),
      vs(t.output_tokens, p.output_tokens),
      label,
      t.reasoning_tokens ? [h('span', { class: 'muted' }, `${int(t.reasoning_tokens)} reasoning`)] : [],
    ),
    shareCard,
  ];
}

/**
 * `colors`: group value -> palette index of its series in the chart (the rest are "other"). `other`: the groups the
 * API left out of its page, summed, shown as the last line of the body (never sorted among the groups).
 */
interface TableData {
  rows: GroupRow[];
  total: Totals;
  colors: Map<string, number>;
  other: (Totals & { groups: number }) | null;
}

function groupTable(
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
  const groupSort = (a: GroupRow, b: GroupRow) =>
    shownValue(dim, groupValue(a, dim)).localeCompare(shownValue(dim, groupValue(b, dim)));
  const sorted = [...rows].sort((a, b) => {
    if (sortBy.key === 'group') return groupSort(a, b) * sortBy.dir;
    const col = cols.find((c) => c.key === sortBy.key) ?? cols.find((c) => c.key === 'cost_usd')!;
    const x = col.sort(a, total);
    const y = col.sort(b, total);
    return (x === y ? groupSort(a, b) : x < y ? -1 : 1) * sortBy.dir;
  });
  const th = (key: string, label: string, title?: string) => {
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
  };
  const body = sorted.map((r) => {
    const value = groupValue(r, dim);
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
            dataset: { col: c.key, value: c.value(r, total) },
            title: c.key === 'cost_usd' && r.cost_usd !== null ? `$${r.cost_usd}` : undefined,
          },
          c.show(r, total),
        ),
      ),
    );
    tr.addEventListener('click', () => addFilter(ctx, dim, value));
    tr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') addFilter(ctx, dim, value);
    });
    return tr;
  });
  if (other) {
    body.push(
      h(
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
      ),
    );
  }
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
        th('group', dimLabel(dim)),
        cols.map((c) => th(c.key, c.label, c.title)),
      ),
    ),
    h('tbody', {}, body),
    h('tfoot', {}, foot),
  );
}

/** "6,000 groups by customer_id (the 100 most expensive, then the others together)", or the search's count. */
function tableTitleText(dim: string, page: UsageResponse, all: number): string {
  const groups = (n: number) => `${int(n)} ${n === 1 ? 'group' : 'groups'}`;
  if (page.search) return `${groups(page.groups)} of ${int(all)} by ${dimLabel(dim)} match "${page.search}"`;
  const first = page.offset === 0 ? 'most expensive' : `next most expensive from rank ${int(page.offset + 1)}`;
  return `${groups(all)} by ${dimLabel(dim)}${page.other ? ` (the ${page.rows.length} ${first}, then the others together)` : ''}`;
}

/** Previous / next page of groups, and where this page is in the ranking. */
function pagerControls(page: UsageResponse, go: (offset: number) => void): HTMLElement[] {
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

/** Says which parts of the shown ranges (this period and the previous one) retention left uncounted, if any. */
function showUncounted(note: HTMLElement, parts: { from: string; to: string }[], keptFrom: string | null): void {
  if (parts.length === 0 || keptFrom === null) return;
  note.classList.remove('hidden');
  note.textContent =
    `Per-request records before ${dateTime(keptFrom)} were deleted (storage.retention); totals come from the hourly and daily rollups, ` +
    `except ${parts.map((p) => `${dateTime(p.from)} → ${dateTime(p.to)}`).join(', ')}, which only those records could answer and which are not counted.`;
}
