/**
 * Budgets: every budget in its current period (spend against the limit, the burn-rate forecast, the alert state and
 * what happens at the limit), the spend freezes in force with a button to lift each, and a form to create or change
 * a runtime budget. Budgets from gateway.config.yaml are shown read-only.
 */
import { api, type BudgetJson } from './api.js';
import { budgetForm, ON_EXCEED_OF } from './budget-form.js';
import type { AppCtx } from './context.js';
import { h, replace } from './dom.js';
import { dateTime, money } from './format.js';
import { scopeText } from './key-names.js';
import { alertHistory } from './alert-history.js';
import { freezeTable } from './freezes.js';

/** "12.5" (USD, as the API writes money) in pico-USD, exactly. */
function pico(usd: string): bigint {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole) * 1_000_000_000_000n + BigInt(frac.padEnd(12, '0').slice(0, 12));
}

/** "50 %", "0.4 %"; a spend too small to show as a tenth of a percent is "<0.1 %", never 0. */
function percent(share: number): string {
  const tenths = Math.round(share * 1000) / 10;
  if (tenths === 0 && share > 0) return '<0.1 %';
  return `${Number.isInteger(tenths) ? tenths : tenths.toFixed(1)} %`;
}

/** The highest alert threshold spend reached this period, or what the lowest is while none is. */
function alertState(b: BudgetJson): HTMLElement {
  const reached = b.alert_at.filter((t) => b.used_share >= t);
  const top = reached[reached.length - 1];
  if (top === undefined)
    return h('span', { class: 'muted', dataset: { alert: 'none' } }, `first alert at ${percent(b.alert_at[0] ?? 1)}`);
  return h(
    'span',
    { class: `badge ${top >= 1 ? 'bad' : 'warn'}`, dataset: { alert: String(top) } },
    top >= 1 ? 'limit reached' : `${percent(top)} reached`,
  );
}

/** Spent against the limit: a bar (paler for what open requests hold) and the figures. */
function spendBar(b: BudgetJson): HTMLElement {
  const share = (usd: string) => Math.min(100, (Number(pico(usd)) / Math.max(1, Number(pico(b.limit_usd)))) * 100);
  const spent = share(b.spent_usd);
  const held = Math.min(100 - spent, share(b.reserved_usd));
  const level = b.used_share >= 1 ? 'bad' : b.alerted ? 'warn' : 'good';
  return h(
    'div',
    {
      class: 'spend',
      title: `$${b.spent_usd} spent, $${b.reserved_usd} held by requests in flight, limit $${b.limit_usd}`,
    },
    h(
      'div',
      { class: 'bar', role: 'meter', 'aria-valuenow': b.used_share, 'aria-valuemin': 0, 'aria-valuemax': 1 },
      h('span', { class: `fill ${level}`, style: `width: ${spent}%` }),
      h('span', { class: 'held', style: `width: ${held}%` }),
    ),
    h(
      'span',
      { class: 'small' },
      `${money(pico(b.spent_usd))} of ${money(pico(b.limit_usd))} · ${percent(b.used_share)}`,
      pico(b.reserved_usd) > 0n ? ` · ${money(pico(b.reserved_usd))} in flight` : '',
    ),
  );
}

/** The spend projected at the end of the period, and when the limit is reached at this rate if it is. */
function forecastText(b: BudgetJson): HTMLElement {
  if (!b.forecast)
    return h(
      'span',
      { class: 'muted', title: 'No forecast until the budget was watched long enough (alerts.forecast)' },
      'not yet',
    );
  const over = b.forecast.limit_reached_at;
  return h(
    'span',
    {},
    money(pico(b.forecast.projected_usd)),
    over ? h('br') : null,
    over ? h('span', { class: 'warn small' }, `limit at ${dateTime(over)}`) : null,
  );
}

function budgetRow(b: BudgetJson, edit: (b: BudgetJson) => void): HTMLElement {
  return h(
    'tr',
    { dataset: { budget: b.id, scope: b.scope } },
    h(
      'td',
      { dataset: { col: 'budget' } },
      h('span', { class: 'mono small' }, b.id),
      ' ',
      h(
        'span',
        { class: 'badge', title: b.source === 'yaml' ? 'From gateway.config.yaml: change it there' : '' },
        b.source,
      ),
    ),
    h('td', { dataset: { col: 'workspace' } }, b.workspace),
    h('td', { dataset: { col: 'scope' } }, scopeText(b.scope)),
    h(
      'td',
      { class: 'nowrap', dataset: { col: 'period' } },
      b.period === 'day' ? 'UTC day' : 'UTC month',
      h('br'),
      h('span', { class: 'muted small' }, `ends ${dateTime(b.period_end)}`),
    ),
    h('td', { dataset: { col: 'spend', spent: b.spent_usd, limit: b.limit_usd } }, spendBar(b)),
    h('td', { dataset: { col: 'forecast', projected: b.forecast?.projected_usd ?? '' } }, forecastText(b)),
    h('td', { dataset: { col: 'alert' } }, alertState(b)),
    h('td', { dataset: { col: 'action', value: ON_EXCEED_OF[b.action] } }, ON_EXCEED_OF[b.action]),
    h(
      'td',
      {},
      b.source === 'runtime'
        ? h('button', { type: 'button', class: 'btn small', dataset: { edit: b.id }, onclick: () => edit(b) }, 'Edit')
        : null,
    ),
  );
}

function budgetTable(rows: BudgetJson[], edit: (b: BudgetJson) => void): HTMLElement {
  const heads = [
    'Budget',
    'Workspace',
    'Counts',
    'Period',
    'Spent of limit',
    'Forecast at period end',
    'Alerts',
    'At the limit',
    '',
  ];
  return h(
    'table',
    { class: 'grid', id: 'budgets' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        heads.map((x) => h('th', {}, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((b) => budgetRow(b, edit)),
    ),
  );
}

/** Which budgets the search box keeps: its text in the id, the workspace or what the budget counts (key labels too). */
const matches = (b: BudgetJson, text: string): boolean =>
  !text || [b.id, b.workspace, b.scope, scopeText(b.scope)].some((x) => x.toLowerCase().includes(text));

export async function renderBudgets(root: HTMLElement, ctx: AppCtx, isCurrent: () => boolean): Promise<void> {
  const formHost = h('div', {});
  const formTitle = h('h2', {}, 'Create a budget');
  const tableHost = h('div', { class: 'table-wrap' }, h('div', { class: 'empty-inline' }, 'Loading…'));
  const freezeHost = h('div', { class: 'table-wrap' });
  const alertHost = h('div', { class: 'table-wrap' });
  const search = h('input', {
    type: 'search',
    id: 'budget-search',
    placeholder: 'Search budgets',
    'aria-label': 'Search the budgets',
    autocomplete: 'off',
  });
  const more = h('button', { type: 'button', class: 'btn small hidden', id: 'more-budgets' }, 'Show more budgets');
  const saved = () => ctx.update({});
  const edit = (b: BudgetJson) => {
    formTitle.textContent = `Change budget ${b.id}`;
    replace(
      formHost,
      budgetForm(ctx, b, saved),
      h('button', { type: 'button', class: 'btn small', id: 'budget-cancel', onclick: saved }, 'Cancel'),
    );
    formHost.scrollIntoView({ block: 'nearest' });
    (formHost.querySelector('#budget-usd') as HTMLInputElement | null)?.focus();
  };
  replace(formHost, budgetForm(ctx, null, saved));
  replace(
    root,
    h(
      'section',
      { class: 'panel', id: 'freeze-panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Spend freezes in force')),
      freezeHost,
    ),
    h(
      'section',
      { class: 'panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Budgets this period'), h('span', { class: 'spacer' }), search),
      tableHost,
      more,
    ),
    h(
      'section',
      { class: 'panel', id: 'budget-form-panel' },
      h('header', { class: 'panel-head' }, formTitle),
      h(
        'p',
        { class: 'muted small' },
        'Budgets made here are stored in the usage store and applied by every instance sharing it within seconds. A budget per tag value or per key shows as one row (tag = *) at zero until a value has spend this period, then each value once.',
      ),
      formHost,
    ),
    h(
      'section',
      { class: 'panel' },
      h('header', { class: 'panel-head' }, h('h2', {}, 'Budget and spend alerts')),
      alertHost,
    ),
  );

  const [first, freezes, alerts] = await Promise.all([api.budgets(), api.freezes(), alertHistory()]);
  if (!isCurrent()) return;
  replace(freezeHost, freezeTable(ctx, freezes.data));
  replace(alertHost, alerts);
  pageBudgets(ctx, { host: tableHost, search, more }, first, edit);
}

/** The budgets table, filtered by the search box as it is typed; further pages of the API join it on demand. */
function pageBudgets(
  ctx: AppCtx,
  { host: tableHost, search, more }: { host: HTMLElement; search: HTMLInputElement; more: HTMLButtonElement },
  first: { data: BudgetJson[]; next_cursor: string | null },
  edit: (b: BudgetJson) => void,
): void {
  let rows = first.data;
  let next = first.next_cursor;
  const show = () => {
    const text = search.value.trim().toLowerCase();
    const shown = rows.filter((b) => matches(b, text));
    more.classList.toggle('hidden', next === null);
    if (rows.length === 0)
      return replace(
        tableHost,
        h(
          'div',
          { class: 'empty-inline', id: 'no-budgets' },
          'No budget yet: create one below, or declare one under workspaces[].limits.budgets in gateway.config.yaml.',
        ),
      );
    if (shown.length === 0)
      return replace(tableHost, h('div', { class: 'empty-inline' }, `No budget matches "${search.value.trim()}".`));
    replace(tableHost, budgetTable(shown, edit));
  };
  search.addEventListener('input', show);
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const page = await api.budgets(next);
      rows = [...rows, ...page.data];
      next = page.next_cursor;
      show();
    } catch (err) {
      ctx.fail(err);
    } finally {
      more.disabled = false;
    }
  });
  show();
}
