/**
 * The latency and errors view: p50 and p95 of latency, of the gateway's overhead (latency less the provider's time) and
 * of the provider's time to first byte per provider and model, over time, and the error rate by status and by error code (GET /api/latency). Requests and errors are exact;
 * the percentiles come from the range's newest records, as the note under the cards says.
 */
import { api, type LatencyResponse } from './api.js';
import { bucketLabel, int, ms, pct } from './format.js';
import { destroyChart, drawLines, PALETTE, partialBuckets, PARTIAL_MARK } from './chart.js';
import type { AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { resolveRange } from './state.js';
import { toolbar } from './toolbar.js';

/** Provider and model pairs drawn in the chart (the busiest). */
const LINES = 6;

type Model = LatencyResponse['models'][number];

export async function renderLatency(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const s = ctx.state;
  const range = resolveRange(s);
  root.dataset.from = String(range.from);
  root.dataset.to = String(range.to);
  const body = h('div', {}, h('div', { class: 'card loading' }, 'Loading…'));
  replace(root, toolbar(ctx, { groupBy: false }), body);
  const answer = await api.latency({
    groupBy: [],
    from: range.from,
    to: range.to,
    filters: s.filters,
    interval: range.interval,
  });
  if (!isCurrent()) return;
  const { errors, sample } = answer;
  const canvas = h('canvas', { id: 'latency-chart', 'aria-label': 'p95 time to first byte over time' });
  const overheadCanvas = h('canvas', { id: 'overhead-chart', 'aria-label': 'p95 gateway overhead over time' });
  replace(
    body,
    h(
      'section',
      { class: 'cards', id: 'latency-overview' },
      summaryCard('requests', 'Requests', int(errors.requests), String(errors.requests)),
      summaryCard('error_rate', 'Error rate', pct(errors.errors, errors.requests), String(errors.errors)),
    ),
    h(
      'p',
      { class: 'muted small', id: 'latency-sample', dataset: { records: String(sample.records) } },
      sample.complete
        ? `Percentiles and error codes from all ${int(sample.records)} requests of the range.`
        : `Percentiles and error codes from ${int(sample.records)} requests sampled over the range (the newest of each ${range.interval}, each weighed by its ${range.interval}'s requests); requests and errors count the whole range.`,
      ' Gateway overhead is the latency less the provider’s time, from sending the request upstream to the last byte of its answer; requests that never reached a provider, and records kept before the gateway measured it, are left out of it.',
    ),
    chartPanel('p95 time to first byte by provider and model', range.interval, canvas),
    chartPanel('p95 gateway overhead by provider and model', range.interval, overheadCanvas),
    panel('Latency by provider and model', modelTable(answer.models)),
    panel('Errors by status', statusTable(errors.by_status, errors.requests)),
    panel('Errors by code', codeTable(errors.by_code)),
  );
  const buckets = answer.buckets.map((b) => Date.parse(b));
  const partial = partialBuckets(buckets, range.interval, range.from, range.to);
  const labels = buckets.map((b, i) => bucketLabel(b, range.interval) + (partial[i] ? PARTIAL_MARK : ''));
  const lines = (series: 'ttfb_p95' | 'overhead_p95') =>
    answer.models.slice(0, LINES).map((m, i) => ({
      label: `${m.provider} ${m.model}`,
      color: PALETTE[i % PALETTE.length],
      values: m.series[series],
    }));
  destroyChart();
  drawLines(canvas, labels, lines('ttfb_p95'), (v) => ms(Math.round(v)));
  drawLines(overheadCanvas, labels, lines('overhead_p95'), (v) => ms(Math.round(v)));
}

const chartPanel = (title: string, interval: 'hour' | 'day', canvas: HTMLElement) =>
  h(
    'section',
    { class: 'panel' },
    h(
      'header',
      { class: 'panel-head' },
      h('h2', {}, title),
      h('span', { class: 'muted small' }, `UTC ${interval === 'hour' ? 'hours' : 'days'}`),
    ),
    h('div', { class: 'chart-box' }, canvas),
  );

const summaryCard = (metric: string, title: string, value: string, exact: string) =>
  h(
    'div',
    { class: 'card', dataset: { metric, value: exact } },
    h('div', { class: 'card-title' }, title),
    h('div', { class: 'card-value' }, value),
  );

const panel = (title: string, content: HTMLElement) =>
  h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, h('h2', {}, title)),
    h('div', { class: 'table-wrap' }, content),
  );

function table(id: string, head: string[], rows: HTMLElement[]): HTMLElement {
  if (rows.length === 0) return h('div', { class: 'empty-inline', id }, 'None in this range.');
  return h(
    'table',
    { class: 'grid', id },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((t, i) => h('th', { class: i > 0 ? 'num' : '' }, t)),
      ),
    ),
    h('tbody', {}, rows),
  );
}

const num = (col: string, value: string | number | null, shown: string) =>
  h('td', { class: 'num', dataset: { col, value: value === null ? '' : String(value) } }, shown);

function modelTable(models: Model[]): HTMLElement {
  return table(
    'latency-models',
    [
      'Provider · model',
      'Requests',
      'Error rate',
      'Latency p50',
      'p95',
      'Overhead p50',
      'p95',
      'First byte p50',
      'p95',
      'Sampled',
    ],
    models.map((m) =>
      h(
        'tr',
        { dataset: { provider: m.provider, model: m.model } },
        h('td', {}, h('div', {}, m.model), h('div', { class: 'muted small' }, m.provider)),
        num('requests', m.requests, int(m.requests)),
        num('errors', m.errors, pct(m.errors, m.requests)),
        num('latency_p50', m.latency_ms.p50, ms(m.latency_ms.p50)),
        num('latency_p95', m.latency_ms.p95, ms(m.latency_ms.p95)),
        num('overhead_p50', m.overhead_ms.p50, ms(m.overhead_ms.p50)),
        num('overhead_p95', m.overhead_ms.p95, ms(m.overhead_ms.p95)),
        num('ttfb_p50', m.ttfb_ms.p50, ms(m.ttfb_ms.p50)),
        num('ttfb_p95', m.ttfb_ms.p95, ms(m.ttfb_ms.p95)),
        num('sampled', m.sampled, int(m.sampled)),
      ),
    ),
  );
}

function statusTable(rows: LatencyResponse['errors']['by_status'], total: number): HTMLElement {
  return table(
    'latency-status',
    ['Status', 'Requests', 'Share'],
    rows.map((r) =>
      h(
        'tr',
        { dataset: { status: String(r.status) } },
        h('td', {}, h('span', { class: `status ${r.status < 400 ? 'ok' : 'err'}` }, String(r.status))),
        num('requests', r.requests, int(r.requests)),
        num('share', r.requests, pct(r.requests, total)),
      ),
    ),
  );
}

function codeTable(rows: LatencyResponse['errors']['by_code']): HTMLElement {
  return table(
    'latency-codes',
    ['Error code', 'Status', 'Requests (sampled)'],
    rows.map((r) =>
      h(
        'tr',
        { dataset: { code: r.error_code } },
        h('td', {}, h('code', {}, r.error_code)),
        num('status', r.status, String(r.status)),
        num('requests', r.requests, int(r.requests)),
      ),
    ),
  );
}
