/** The requests view: the latest records, newest first, keyset-paged, with the shared range and filters. */
import { api, type RecordJson } from './api.js';
import { addFilter, type AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { dateTime, int, money, ms } from './format.js';
import { BUILTIN_LABELS, resolveRange } from './state.js';
import { toolbar } from './toolbar.js';

const PAGE = 50;

/** Paging position; reset whenever the range or the filters change. */
let paging: { key: string; from: number; to: number; cursors: (string | null)[] } | undefined;

const PROVENANCE: Record<string, { label: string; title: string; cls: string } | undefined> = {
  estimated: {
    label: 'estimated',
    title: 'The provider reported no usage: tokens were counted with a tokenizer',
    cls: 'badge warn',
  },
  partial: { label: 'partial', title: 'The stream was cut: the cost covers what was seen', cls: 'badge warn' },
  unpriced: { label: 'unpriced', title: 'No price for this model: the cost is unknown (not $0)', cls: 'badge bad' },
  not_counted: {
    label: 'not counted',
    title: 'Audio or image answer with nothing to price it by: no cost (not $0)',
    cls: 'badge',
  },
};

type Paging = NonNullable<typeof paging>;
type Page = Awaited<ReturnType<typeof api.requests>>;

export async function renderRequests(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const s = ctx.state;
  const p = currentPaging(ctx);
  root.dataset.from = String(p.from);
  root.dataset.to = String(p.to);
  const tableHost = h('div', { class: 'table-wrap' }, h('div', { class: 'empty-inline' }, 'Loading…'));
  const pager = h('div', { class: 'pager' });
  replace(
    root,
    toolbar(ctx, { groupBy: false }),
    h(
      'section',
      { class: 'panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Latest requests'), h('span', { class: 'spacer' }), pager),
      tableHost,
    ),
  );

  const cursor = p.cursors[p.cursors.length - 1];
  const page = await api.requests({ from: p.from, to: p.to, filters: s.filters, limit: PAGE, cursor });
  if (!isCurrent()) return;

  replace(pager, ...pagerControls(ctx, p, page));
  replace(tableHost, page.data.length === 0 ? noRequests(ctx) : requestsTable(ctx, page));
}

/** The paging position for the current range and filters, starting over at the newest page when they changed. */
function currentPaging(ctx: AppCtx): Paging {
  const s = ctx.state;
  const key = JSON.stringify([s.preset, s.from, s.to, s.filters]);
  if (!paging || paging.key !== key) {
    const r = resolveRange(s);
    paging = { key, from: r.from, to: r.to, cursors: [null] };
  }
  return paging;
}

/** Newer / page number / Older: the cursor stack grows going older and shrinks going newer. */
function pagerControls(ctx: AppCtx, p: Paging, page: Page): HTMLElement[] {
  const pageNo = p.cursors.length;
  return [
    h(
      'button',
      {
        type: 'button',
        class: 'btn small',
        id: 'page-newer',
        disabled: pageNo === 1,
        onclick: () => {
          p.cursors.pop();
          ctx.update({});
        },
      },
      '‹ Newer',
    ),
    h('span', { class: 'muted small', id: 'page-no' }, `page ${pageNo}`),
    h(
      'button',
      {
        type: 'button',
        class: 'btn small',
        id: 'page-older',
        disabled: !page.next_cursor,
        onclick: () => {
          p.cursors.push(page.next_cursor);
          ctx.update({});
        },
      },
      'Older ›',
    ),
  ];
}

function noRequests(ctx: AppCtx): HTMLElement {
  return h(
    'div',
    { class: 'empty-inline' },
    'No requests in this range',
    ctx.state.filters.length ? ' with these filters' : '',
    '.',
  );
}

function requestsTable(ctx: AppCtx, page: Page): HTMLElement {
  return h(
    'table',
    { class: 'grid', id: 'requests' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Time', 'Tags', 'Model', 'Endpoint', 'Status', 'Latency', 'Input', 'Output', 'Cache r / w', 'Cost'].map(
          (t, i) => h('th', { class: i >= 5 ? 'num' : '' }, t),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      page.data.map((r) => requestRow(ctx, r)),
    ),
  );
}

function requestRow(ctx: AppCtx, r: RecordJson): HTMLElement {
  const tags = Object.entries(r.tags).sort(([a], [b]) => a.localeCompare(b));
  const prov = PROVENANCE[r.provenance];
  const ok = r.status < 400 && !r.error_code;
  const model =
    r.served_model && r.served_model !== r.model ? `${r.model ?? '—'} → ${r.served_model}` : (r.model ?? '—');
  return h(
    'tr',
    { dataset: { id: r.id, provenance: r.provenance, cost: r.cost_usd ?? '' } },
    h('td', { class: 'nowrap', title: r.time }, dateTime(r.time)),
    h(
      'td',
      { class: 'tags' },
      tags.length
        ? tags.map(([k, v]) =>
            h(
              'button',
              {
                type: 'button',
                class: 'tag',
                title: `Filter by ${k} = ${v}`,
                dataset: { tag: k, value: v },
                onclick: () => addFilter(ctx, tagDimension(k), v),
              },
              h('span', { class: 'tag-k' }, k),
              v,
            ),
          )
        : h('span', { class: 'muted' }, '—'),
    ),
    h(
      'td',
      {},
      h('div', {}, model),
      h('div', { class: 'muted small' }, r.provider ?? '—', r.streamed ? ' · stream' : ''),
    ),
    h('td', { class: 'muted' }, r.endpoint ?? '—'),
    h(
      'td',
      {},
      h('span', { class: `status ${ok ? 'ok' : 'err'}`, title: r.error_code ?? undefined }, String(r.status)),
      r.error_code ? h('div', { class: 'muted small' }, r.error_code) : null,
    ),
    h(
      'td',
      { class: 'num', title: r.ttfb_ms !== null ? `first byte after ${ms(r.ttfb_ms)}` : undefined },
      ms(r.latency_ms),
    ),
    h('td', { class: 'num' }, int(r.input_tokens)),
    h('td', { class: 'num' }, int(r.output_tokens)),
    h('td', { class: 'num muted' }, `${int(r.cache_read_tokens)} / ${int(r.cache_write_tokens)}`),
    h(
      'td',
      { class: 'num nowrap', title: r.cost_usd !== null ? `$${r.cost_usd}` : undefined },
      r.provenance === 'unpriced' || r.provenance === 'not_counted' ? '—' : money(r.cost_pico),
      prov ? [' ', h('span', { class: prov.cls, title: prov.title }, prov.label)] : null,
    ),
  );
}

/** The filter dimension of a tag: a tag named like a built-in dimension (model, status...) is `tag:<key>`. */
export function tagDimension(key: string): string {
  return Object.hasOwn(BUILTIN_LABELS, key) ? `tag:${key}` : key;
}
