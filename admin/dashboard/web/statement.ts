/**
 * Statements: the spend of one tag value (a customer, a team) or any other filter over the chosen range, by model and
 * by UTC day, for teams that bill their own customers. Printable (the page's print style keeps only the statement)
 * and downloadable as CSV (GET /api/usage.csv, whose lines carry the range and the filters).
 */
import { api, type GroupRow, type Totals, type UsageParams, type UsageResponse } from './api.js';
import { dimLabel, type AppCtx } from './context.js';
import { h, replace, saveFile } from './dom.js';
import { dateTime, int } from './format.js';
import { shownValue } from './key-names.js';
import { resolveRange } from './state.js';
import { toolbar } from './toolbar.js';
import { costText, ZERO } from './usage-columns.js';

const cells = (t: Totals): HTMLElement[] => [
  h('td', { class: 'num', dataset: { col: 'requests' } }, int(t.requests)),
  h('td', { class: 'num' }, int(t.input_tokens + t.cache_read_tokens + t.cache_write_tokens)),
  h('td', { class: 'num' }, int(t.output_tokens)),
  h('td', { class: 'num', dataset: { col: 'cost', value: t.cost_usd ?? '' } }, costText(t)),
  h(
    'td',
    { class: 'num', dataset: { col: 'unpriced', value: String(t.unpriced_count + t.not_counted_count) } },
    t.unpriced_count + t.not_counted_count ? int(t.unpriced_count + t.not_counted_count) : '',
  ),
];

const HEAD = ['Requests', 'Input tokens', 'Output tokens', 'Cost', 'Unpriced'];

function table(id: string, first: string[], rows: { key: string[]; t: Totals }[], total: Totals): HTMLElement {
  return h(
    'table',
    { class: 'grid', id },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        [...first, ...HEAD].map((x, i) => h('th', { class: i < first.length ? '' : 'num' }, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          { dataset: { row: r.key.join('|') } },
          r.key.map((k) => h('td', {}, k)),
          cells(r.t),
        ),
      ),
    ),
    h('tfoot', {}, h('tr', { class: 'total' }, h('td', { colspan: first.length }, 'Total'), cells(total))),
  );
}

const model = (r: GroupRow): string => r.group.model ?? '(none)';

/** Asks for the tag and value when no filter is set: a statement is the spend of one value. */
function pickValue(ctx: AppCtx): HTMLElement {
  const tags = ctx.dims.filter((d) => !['model', 'provider', 'requested_model', 'served_model', 'status'].includes(d));
  const dim = h(
    'select',
    { id: 'statement-dim', 'aria-label': 'Statement of' },
    tags.map((d) => h('option', { value: d, selected: d === 'customer_id' }, dimLabel(d))),
  );
  const value = h('input', { id: 'statement-value', placeholder: 'e.g. acme', required: true, autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'create-key', id: 'statement-pick' },
    h('label', {}, h('span', { class: 'muted' }, 'Statement of'), dim),
    h('label', {}, h('span', { class: 'muted' }, 'Value'), value),
    h('button', { type: 'submit', class: 'btn primary' }, 'Show statement'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (value.value.trim()) ctx.update({ filters: [[dim.value, value.value.trim()]] });
  });
  return h(
    'section',
    { class: 'panel' },
    h('p', { class: 'muted' }, 'A statement is the spend of one tag value (a customer, a team) over the range.'),
    form,
  );
}

export async function renderStatement(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const s = ctx.state;
  const range = resolveRange(s);
  root.dataset.from = String(range.from);
  root.dataset.to = String(range.to);
  if (s.filters.length === 0) return replace(root, toolbar(ctx, { groupBy: false }), pickValue(ctx));
  const base: UsageParams = { groupBy: ['model'], from: range.from, to: range.to, filters: s.filters };
  const host = h(
    'section',
    { class: 'panel statement', id: 'statement' },
    h('div', { class: 'empty-inline' }, 'Loading…'),
  );
  replace(root, toolbar(ctx, { groupBy: false }), host);
  const [byModel, byDay] = await Promise.all([api.usage(base), api.usage({ ...base, interval: 'day' })]);
  if (!isCurrent()) return;
  replace(host, ...statementBody(ctx, base, byModel, byDay));
}

function statementBody(ctx: AppCtx, base: UsageParams, byModel: UsageResponse, byDay: UsageResponse): HTMLElement[] {
  const who = ctx.state.filters.map(([d, v]) => `${dimLabel(d)} = ${shownValue(d, v)}`).join(', ');
  const total = byModel.total ?? ZERO;
  const print = h(
    'button',
    { type: 'button', class: 'btn', id: 'statement-print', onclick: () => window.print() },
    'Print',
  );
  const csv = h('button', { type: 'button', class: 'btn', id: 'statement-csv' }, 'Download CSV');
  csv.onclick = async () => {
    try {
      const { text, filename } = await api.usageCsv({ ...base, interval: 'day' });
      saveFile(text, `statement-${filename}`);
    } catch (err) {
      ctx.fail(err);
    }
  };
  const head = h(
    'header',
    { class: 'panel-head' },
    h('h2', { id: 'statement-title' }, `Statement: ${who}`),
    h('span', { class: 'spacer' }),
    print,
    csv,
  );
  const period = h(
    'p',
    { class: 'muted', id: 'statement-range' },
    `${dateTime(byModel.from)} → ${dateTime(byModel.to)}`,
  );
  if (total.requests === 0)
    return [head, period, h('div', { class: 'empty-inline', id: 'statement-empty' }, 'No requests in this range.')];
  const summary = h(
    'p',
    { id: 'statement-total', dataset: { cost: total.cost_usd ?? '' } },
    h('strong', {}, costText(total)),
    ` for ${int(total.requests)} requests`,
    total.unpriced_count + total.not_counted_count
      ? h(
          'span',
          { class: 'warn' },
          ` (+ ${int(total.unpriced_count + total.not_counted_count)} unpriced or not counted: cost unknown, not $0)`,
        )
      : '',
  );
  const models = byModel.rows.map((r) => ({ key: [model(r)], t: r as Totals }));
  if (byModel.other) models.push({ key: [`${byModel.other.groups} other models`], t: byModel.other });
  const days = [...byDay.rows]
    .sort((a, b) => (a.bucket ?? '').localeCompare(b.bucket ?? '') || model(a).localeCompare(model(b)))
    .map((r) => ({ key: [(r.bucket ?? '').slice(0, 10), model(r)], t: r as Totals }));
  return [
    head,
    period,
    summary,
    h('h3', {}, 'By model'),
    h('div', { class: 'table-wrap' }, table('statement-models', ['Model'], models, total)),
    h('h3', {}, 'By UTC day and model'),
    h('div', { class: 'table-wrap' }, table('statement-days', ['Day (UTC)', 'Model'], days, total)),
  ];
}
