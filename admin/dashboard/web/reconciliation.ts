/**
 * The reconciliation view: the stored reconciliation runs (GET /api/reconciliation), and one run's report: its days x
 * models with their status, the gateway against the bill as two lines over the days, and the inferred discount.
 * Amounts arrive as exact USD decimal strings and are summed as bigint pico-USD; only the chart draws floats.
 */
import { api } from './api.js';
import { drawLines, PALETTE } from './chart.js';
import type { AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { dateTime, money } from './format.js';

/** GET /api/reconciliation (admin/openapi/reconciliation-answers.ts describes every field). */
export interface ReconciliationAnswer {
  runs: {
    id: number;
    provider: string;
    from: string;
    to: string;
    finished_at: string;
    source: string;
    status: 'ok' | 'failed';
    error: string | null;
    drift: string | null;
  }[];
  report: {
    run_id: number;
    provider: string;
    from: string;
    to: string;
    tolerance: string;
    discount: { multiplier: string; models: string[]; override: string } | null;
    totals: {
      gateway_usd: string;
      /** Absent from reports stored before the gateway kept it. */
      gateway_list_usd?: string;
      provider_usd: string;
      difference_usd: string;
      drift: string | null;
    };
    worst_day: { day: string; drift: string } | null;
    counts: Record<string, number>;
    lines: {
      day: string;
      model: string | null;
      scope: string | null;
      status: string;
      gateway: { cost_usd: string } | null;
      provider: { cost_usd: string | null } | null;
      expected_usd: string | null;
      difference_usd: string | null;
      ratio: string | null;
      note: string;
    }[];
    lines_total: number;
    next_lines_offset: number | null;
  } | null;
}

type Report = NonNullable<ReconciliationAnswer['report']>;
type Line = Report['lines'][number];
type Run = ReconciliationAnswer['runs'][number];

/** Lines read per request, and at most this many in all (a report of months x hundreds of models). */
const LINES_PAGE = 1000;
const LINES_MAX = 20_000;
const RUNS_SHOWN = 20;

/** What the operator picked on the page: kept while the tab lives, outside the saved view state. */
const picked: { provider: string | null; run: number | null; status: string | null } = {
  provider: null,
  run: null,
  status: null,
};

const BADGE: Record<string, string> = {
  match: 'good',
  within_tolerance: 'good',
  discounted: 'good',
  not_final: '',
  unpriced: 'warn',
  priced_differently: 'warn',
  gateway_only: 'warn',
};

/** An exact USD decimal string ("-0.345") as pico-USD. */
function usdToPico(usd: string): bigint {
  const neg = usd.startsWith('-');
  const [whole, frac = ''] = (neg ? usd.slice(1) : usd).split('.');
  const pico = BigInt(whole) * 10n ** 12n + BigInt((frac + '0'.repeat(12)).slice(0, 12));
  return neg ? -pico : pico;
}

async function readReport(run: number | null, provider: string | null): Promise<ReconciliationAnswer> {
  const base = new URLSearchParams({ limit: String(RUNS_SHOWN), lines_limit: String(LINES_PAGE) });
  if (provider) base.set('provider', provider);
  if (run !== null) base.set('run', String(run));
  const first = await api.reconciliation(base.toString());
  const report = first.report;
  // Every line, a page at a time: the chart sums whole days.
  while (report && report.next_lines_offset !== null && report.lines.length < LINES_MAX) {
    base.set('lines_offset', String(report.next_lines_offset));
    const next = (await api.reconciliation(base.toString())).report;
    if (!next || next.run_id !== report.run_id) break;
    report.lines.push(...next.lines);
    report.next_lines_offset = next.next_lines_offset;
  }
  return first;
}

export async function renderReconciliation(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const body = h('div', {}, h('div', { class: 'card loading' }, 'Loading…'));
  replace(root, body);
  const [answer, all] = await Promise.all([
    readReport(picked.run, picked.provider),
    picked.provider ? api.reconciliation(`limit=${RUNS_SHOWN}&lines_limit=1`) : null,
  ]);
  if (!isCurrent()) return;
  const providers = [...new Set((all ?? answer).runs.map((r) => r.provider))].sort();
  if (answer.runs.length === 0) {
    replace(body, noRuns());
    return;
  }
  const report = answer.report;
  const pick = (patch: Partial<typeof picked>) => {
    Object.assign(picked, patch);
    ctx.update({});
  };
  const canvas = h('canvas', { id: 'recon-chart', 'aria-label': 'Gateway against the bill per day' });
  replace(
    body,
    runsPanel(answer.runs, providers, report?.run_id ?? null, pick),
    report ? reportSection(report, canvas, pick) : noReport(),
  );
  if (report) drawDays(canvas, report.lines);
}

function noRuns(): HTMLElement {
  return h(
    'section',
    { class: 'panel empty-state', id: 'recon-empty' },
    h('h2', {}, 'No reconciliation run yet'),
    h(
      'p',
      {},
      'A run sets the gateway’s recorded spend beside what the provider billed, day by day. Give the provider’s admin key under ',
      h('code', {}, 'reconcile.providers'),
      ' (the gateway then runs it daily), or run ',
      h('code', {}, 'tollgate reconcile --provider openai'),
      '. See docs/reconciliation.md.',
    ),
  );
}

const noReport = () =>
  h(
    'section',
    { class: 'panel', id: 'recon-no-report' },
    h('p', { class: 'muted' }, 'This run has no report: it failed.'),
  );

function runsPanel(
  runs: Run[],
  providers: string[],
  shown: number | null,
  pick: (p: Partial<typeof picked>) => void,
): HTMLElement {
  const select = h(
    'select',
    { id: 'recon-provider', 'aria-label': 'Provider' },
    h('option', { value: '', selected: picked.provider === null }, 'All providers'),
    providers.map((p) => h('option', { value: p, selected: picked.provider === p }, p)),
  );
  select.addEventListener('change', () => pick({ provider: select.value || null, run: null, status: null }));
  const rows = runs.map((r) =>
    h(
      'tr',
      { class: r.id === shown ? 'selected' : '', dataset: { run: String(r.id), status: r.status } },
      h(
        'td',
        {},
        r.status === 'ok'
          ? h('a', { href: '#/reconciliation', onclick: () => pick({ run: r.id, status: null }) }, `#${r.id}`)
          : `#${r.id}`,
      ),
      h('td', {}, r.provider),
      h('td', {}, `${r.from.slice(0, 10)} → ${r.to.slice(0, 10)}`),
      h('td', {}, r.source),
      h('td', {}, h('span', { class: `status ${r.status === 'ok' ? 'ok' : 'err'}`, title: r.error ?? '' }, r.status)),
      h(
        'td',
        { class: 'num', dataset: { col: 'drift', value: r.drift ?? '' } },
        r.drift === null ? '—' : pctOf(r.drift),
      ),
      h('td', {}, dateTime(r.finished_at)),
    ),
  );
  return h(
    'section',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, h('h2', {}, 'Reconciliation runs'), select),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'grid', id: 'recon-runs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Run', 'Provider', 'Days (UTC, end excluded)', 'Source', 'Status', 'Drift', 'Finished (UTC)'].map((t) =>
              h('th', { class: t === 'Drift' ? 'num' : '' }, t),
            ),
          ),
        ),
        h('tbody', {}, rows),
      ),
    ),
  );
}

/** "0.061482" as "6.15%". */
const pctOf = (share: string) => `${(Number(share) * 100).toFixed(2)}%`;

function reportSection(report: Report, canvas: HTMLCanvasElement, pick: (p: Partial<typeof picked>) => void) {
  const t = report.totals;
  const card = (metric: string, title: string, shown: string, value: string, sub: Node | null = null) =>
    h(
      'div',
      { class: 'card', dataset: { metric, value } },
      h('div', { class: 'card-title' }, title),
      h('div', { class: 'card-value' }, shown),
      sub,
    );
  // The list price beside the gateway's cost when pricing.discounts took something off it.
  const list = t.gateway_list_usd;
  const listNote =
    list !== undefined && list !== t.gateway_usd
      ? h('div', { class: 'card-sub muted', dataset: { listCost: list } }, `${money(usdToPico(list))} at list price`)
      : null;
  const lines = picked.status ? report.lines.filter((l) => l.status === picked.status) : report.lines;
  return h(
    'div',
    { id: 'recon-report', dataset: { run: String(report.run_id) } },
    h(
      'section',
      { class: 'cards', id: 'recon-totals' },
      card('provider_usd', `Billed by ${report.provider}`, money(usdToPico(t.provider_usd)), t.provider_usd),
      card('gateway_usd', 'Recorded by the gateway', money(usdToPico(t.gateway_usd)), t.gateway_usd, listNote),
      card('difference_usd', 'Difference', money(usdToPico(t.difference_usd)), t.difference_usd),
      card('drift', 'Drift (final days)', t.drift === null ? '—' : pctOf(t.drift), t.drift ?? ''),
    ),
    h(
      'p',
      { class: 'muted small', id: 'recon-range' },
      `Run #${report.run_id}: ${report.from} to ${report.to} (UTC days, end excluded), tolerance ${pctOf(report.tolerance)}.`,
      report.worst_day ? ` Worst final day ${report.worst_day.day}, drift ${pctOf(report.worst_day.drift)}.` : '',
    ),
    report.discount ? discountNote(report.discount) : null,
    h(
      'section',
      { class: 'panel' },
      h(
        'header',
        { class: 'panel-head' },
        h('h2', {}, 'The gateway against the bill'),
        h('span', { class: 'muted small' }, 'per UTC day; the gateway at the inferred discount where there is one'),
      ),
      h('div', { class: 'chart-box' }, canvas),
    ),
    h(
      'section',
      { class: 'panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Days × models'), statusChips(report.counts, pick)),
      h('div', { class: 'table-wrap' }, linesTable(lines)),
      report.next_lines_offset !== null
        ? h('p', { class: 'muted small' }, `The first ${report.lines.length} lines of ${report.lines_total}.`)
        : null,
    ),
  );
}

function discountNote(d: NonNullable<Report['discount']>): HTMLElement {
  return h(
    'section',
    { class: 'panel', id: 'recon-discount', dataset: { multiplier: d.multiplier } },
    h('header', { class: 'panel-head' }, h('h2', {}, 'Inferred discount')),
    h(
      'p',
      {},
      `The provider charges ${d.multiplier} of list price on ${d.models.join(', ')}. To record costs at that price, add to the configuration:`,
    ),
    h('pre', {}, d.override),
  );
}

function statusChips(counts: Report['counts'], pick: (p: Partial<typeof picked>) => void): HTMLElement {
  const chip = (status: string | null, label: string, n?: number) =>
    h(
      'button',
      {
        type: 'button',
        class: picked.status === status ? 'active' : '',
        dataset: { filter: status ?? 'all' },
        onclick: () => pick({ status }),
      },
      n === undefined ? label : `${label} (${n})`,
    );
  return h(
    'div',
    { class: 'segmented', role: 'group', 'aria-label': 'Status', id: 'recon-statuses' },
    chip(null, 'All'),
    Object.entries(counts).map(([s, n]) => chip(s, s.replace(/_/g, ' '), n)),
  );
}

const usdCell = (col: string, usd: string | null | undefined) =>
  h(
    'td',
    { class: 'num', dataset: { col, value: usd ?? '' } },
    usd === null || usd === undefined ? '—' : money(usdToPico(usd)),
  );

function linesTable(lines: Line[]): HTMLElement {
  if (lines.length === 0) return h('div', { class: 'empty-inline', id: 'recon-lines' }, 'No lines.');
  const head = ['Day', 'Model', 'Scope', 'Status', 'Gateway', 'Provider', 'Difference', 'Ratio'];
  return h(
    'table',
    { class: 'grid', id: 'recon-lines' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((t, i) => h('th', { class: i > 3 ? 'num' : '' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      lines.map((l) =>
        h(
          'tr',
          { dataset: { day: l.day, model: l.model ?? '', status: l.status }, title: l.note },
          h('td', {}, l.day),
          h('td', {}, l.model ?? h('span', { class: 'muted' }, 'no model')),
          h('td', {}, l.scope ?? ''),
          h('td', {}, h('span', { class: `badge ${BADGE[l.status] ?? 'bad'}` }, l.status.replace(/_/g, ' '))),
          usdCell('gateway', l.gateway?.cost_usd),
          usdCell('provider', l.provider?.cost_usd),
          usdCell('difference', l.difference_usd),
          h('td', { class: 'num', dataset: { col: 'ratio', value: l.ratio ?? '' } }, l.ratio ?? '—'),
        ),
      ),
    ),
  );
}

/** Per day: the gateway's cost (at the discount on discounted lines) and the provider's, summed exactly. */
function dailySums(lines: readonly Line[]): { days: string[]; gateway: bigint[]; provider: bigint[] } {
  const sums = new Map<string, { gateway: bigint; provider: bigint }>();
  for (const l of lines) {
    const day = sums.get(l.day) ?? { gateway: 0n, provider: 0n };
    const gateway = l.expected_usd ?? l.gateway?.cost_usd;
    if (gateway) day.gateway += usdToPico(gateway);
    if (l.provider?.cost_usd) day.provider += usdToPico(l.provider.cost_usd);
    sums.set(l.day, day);
  }
  const days = [...sums.keys()].sort();
  return {
    days,
    gateway: days.map((d) => sums.get(d)!.gateway),
    provider: days.map((d) => sums.get(d)!.provider),
  };
}

function drawDays(canvas: HTMLCanvasElement, lines: readonly Line[]): void {
  const { days, gateway, provider } = dailySums(lines);
  // The exact sums, for whoever checks the chart against the table.
  canvas.dataset.days = days.join(',');
  canvas.dataset.gateway = gateway.join(',');
  canvas.dataset.provider = provider.join(',');
  const usd = (v: bigint) => Number(v) / 1e12;
  drawLines(
    canvas,
    days,
    [
      { label: 'Gateway', color: PALETTE[0], values: gateway.map(usd) },
      { label: 'Provider’s bill', color: PALETTE[3], values: provider.map(usd) },
    ],
    (v) => money(BigInt(Math.round(v * 1e12))),
  );
}
