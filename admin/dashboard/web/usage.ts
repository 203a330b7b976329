/** The usage view: overview cards, cost over time by the chosen dimension, the table of groups, CSV export. */
import { api, type SeriesResponse, type Totals, type UsageParams, type UsageResponse } from './api.js';
import { destroyChart, drawChart, OTHER_COLOR, PALETTE, PARTIAL_MARK, partialBuckets, type Series } from './chart.js';
import { dimLabel, type AppCtx } from './context.js';
import { h, replace, saveFile } from './dom.js';
import { dateTime } from './format.js';
import { resolveRange, type Range } from './state.js';
import { toolbar } from './toolbar.js';
import { overviewCards } from './usage-cards.js';
import { pico, ZERO } from './usage-columns.js';
import { groupTable, groupValue, pagerControls, tableTitleText } from './usage-table.js';
import { shownValue } from './key-names.js';

const TOP_N = 8;
/** Typing in the search box asks again once this long without a key stroke. */
const SEARCH_DELAY_MS = 250;

export async function renderUsage(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const s = ctx.state;
  const range = resolveRange(s);
  const dim = s.groupBy;
  const base: UsageParams = { groupBy: [dim], from: range.from, to: range.to, filters: s.filters };
  const prevFrom = range.from - (range.to - range.from);

  const cards = h('section', { class: 'cards', id: 'overview' }, h('div', { class: 'card loading' }, 'Loading…'));
  const chart = chartPanel(ctx, range);
  const table = tablePanel(dim);

  root.dataset.from = String(range.from);
  root.dataset.to = String(range.to);
  root.dataset.groupBy = dim;
  const retention = h('p', { class: 'muted small hidden', id: 'retention-note' });
  replace(root, toolbar(ctx, { groupBy: true }), retention, cards, chart.panel, table.panel);

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
  replace(cards, overviewCards(total, prev.total ?? ZERO, range.label));

  // Chart: the top groups by the chosen metric (their series come from /api/usage/series), the rest as "other".
  const metric = (t: Totals): bigint => (s.metric === 'cost' ? pico(t) : BigInt(t.requests));
  const ranked = [...grouped.rows].sort((a, b) => (metric(b) > metric(a) ? 1 : metric(b) < metric(a) ? -1 : 0));
  const topCount = ranked.length <= TOP_N + 1 ? ranked.length : TOP_N;
  const topValues = ranked.slice(0, topCount).map((r) => groupValue(r, dim));

  pageGroups(ctx, { table, base, grouped, colors: new Map(topValues.map((v, i) => [v, i])) }, isCurrent);
  wireExport(ctx, table.exportBtn, base, grouped.rows.length > 0);

  if (total.requests === 0) {
    destroyChart();
    chart.box.dataset.series = '[]';
    replace(
      chart.box,
      h(
        'div',
        { class: 'empty-inline' },
        'No requests in this range',
        s.filters.length ? ' with these filters' : '',
        '.',
      ),
    );
    drawn();
    return;
  }
  const tableMs = performance.now() - drawing;
  const series = await api.usageSeries({ ...base, interval: range.interval, values: topValues });
  if (!isCurrent()) return;
  drawing = performance.now() - tableMs;
  drawSeries(ctx, chart, { series, range, withOther: ranked.length > topCount });
  drawn();
}

interface ChartPanel {
  panel: HTMLElement;
  box: HTMLElement;
  partialNote: HTMLElement;
}

/** The chart's panel: its title, the metric picker, the canvas, the note on partial buckets. */
function chartPanel(ctx: AppCtx, range: Range): ChartPanel {
  const s = ctx.state;
  const box = h('div', { class: 'chart-box' }, h('canvas', { id: 'cost-chart', 'aria-label': 'Cost over time' }));
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
  const panel = h(
    'section',
    { class: 'panel' },
    h(
      'header',
      { class: 'panel-head' },
      h('h2', {}, `${s.metric === 'cost' ? 'Cost' : 'Requests'} over time by ${dimLabel(s.groupBy)}`),
      h('span', { class: 'muted small', id: 'chart-zone' }, `UTC ${range.interval === 'hour' ? 'hours' : 'days'}`),
      h('span', { class: 'spacer' }),
      metricSel,
    ),
    box,
    partialNote,
  );
  return { panel, box, partialNote };
}

/** The top groups' series (and "other"), with the partial first and last buckets marked. */
function drawSeries(
  ctx: AppCtx,
  chart: ChartPanel,
  { series, range, withOther }: { series: SeriesResponse; range: Range; withOther: boolean },
): void {
  const s = ctx.state;
  const pick = (x: { cost_pico: string[]; requests: number[] }) =>
    s.metric === 'cost' ? x.cost_pico.map((c) => BigInt(c)) : x.requests.map((n) => BigInt(n));
  const lines: Series[] = series.series.map((x, i) => ({
    label: shownValue(s.groupBy, x.group),
    color: PALETTE[i % PALETTE.length],
    values: pick(x),
  }));
  if (withOther && series.other) lines.push({ label: 'other', color: OTHER_COLOR, values: pick(series.other) });
  chart.box.dataset.series = JSON.stringify(lines.map((l) => l.label));
  const buckets = series.buckets.map((b) => Date.parse(b));
  const partial = partialBuckets(buckets, range.interval, range.from, range.to);
  chart.box.dataset.partial = JSON.stringify(partial);
  chart.partialNote.classList.toggle('hidden', !partial.includes(true));
  drawChart(chart.box.querySelector('canvas')!, buckets, { interval: range.interval, partial }, lines, s.metric);
}

interface TablePanel {
  panel: HTMLElement;
  host: HTMLElement;
  title: HTMLElement;
  search: HTMLInputElement;
  pager: HTMLElement;
  exportBtn: HTMLButtonElement;
}

function tablePanel(dim: string): TablePanel {
  const host = h('div', { class: 'table-wrap' });
  const search = h('input', {
    type: 'search',
    id: 'group-search',
    placeholder: `Search ${dimLabel(dim)}`,
    'aria-label': `Search the ${dimLabel(dim)} groups`,
    autocomplete: 'off',
  });
  const pager = h('div', { class: 'pager', id: 'group-pager' });
  const exportBtn = h('button', { type: 'button', class: 'btn', id: 'export-csv', disabled: true }, 'Export CSV');
  const title = h('h2', {}, `By ${dimLabel(dim)}`);
  const panel = h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, title, h('span', { class: 'spacer' }), search, exportBtn),
    host,
    pager,
  );
  return { panel, host, title, search, pager, exportBtn };
}

/** The table pages through the groups (and searches them) on its own: the cards and the chart stay. */
function pageGroups(
  ctx: AppCtx,
  {
    table,
    base,
    grouped,
    colors,
  }: { table: TablePanel; base: UsageParams; grouped: UsageResponse; colors: Map<string, number> },
  isCurrent: () => boolean,
): void {
  const dim = ctx.state.groupBy;
  const total = grouped.total ?? ZERO;
  let shown = grouped;
  const showPage = () => {
    const renderTable = () =>
      replace(table.host, groupTable(ctx, dim, { rows: shown.rows, total, colors, other: shown.other }, renderTable));
    renderTable();
    table.title.textContent = tableTitleText(dim, shown, grouped.groups);
    replace(
      table.pager,
      pagerControls(shown, (offset) => void loadPage(offset)),
    );
  };
  let asked = 0;
  const loadPage = async (offset: number) => {
    const mine = ++asked;
    try {
      const page = await api.usage({ ...base, offset, search: table.search.value.trim() });
      if (mine !== asked || !isCurrent()) return;
      shown = page;
      showPage();
    } catch (err) {
      ctx.fail(err);
    }
  };
  let typing: ReturnType<typeof setTimeout> | undefined;
  table.search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => void loadPage(0), SEARCH_DELAY_MS);
  });
  showPage();
}

/** The CSV of the grouping, downloaded under the file name the API gives it. */
function wireExport(ctx: AppCtx, button: HTMLButtonElement, base: UsageParams, enabled: boolean): void {
  button.disabled = !enabled;
  button.onclick = async () => {
    try {
      const { text, filename } = await api.usageCsv(base);
      saveFile(text, filename);
    } catch (err) {
      ctx.fail(err);
    }
  };
}

/** Says which parts of the shown ranges (this period and the previous one) retention left uncounted, if any. */
function showUncounted(note: HTMLElement, parts: { from: string; to: string }[], keptFrom: string | null): void {
  if (parts.length === 0 || keptFrom === null) return;
  note.classList.remove('hidden');
  note.textContent =
    `Per-request records before ${dateTime(keptFrom)} were deleted (storage.retention); totals come from the hourly and daily rollups, ` +
    `except ${parts.map((p) => `${dateTime(p.from)} → ${dateTime(p.to)}`).join(', ')}, which only those records could answer and which are not counted.`;
}
