/**
 * The form that creates a runtime budget (POST /api/budgets) or changes one (PATCH /api/budgets/{id}). It checks what
 * it can before sending; what the API still refuses is shown beside the field its error names.
 */
import { api, ApiError, type BudgetJson, type BudgetRequest } from './api.js';
import type { AppCtx } from './context.js';
import { h } from './dom.js';
import { keyIdOf } from './key-names.js';

type ScopeKind = 'workspace' | 'tag' | 'per_tag' | 'key' | 'per_key';
const SCOPES: [ScopeKind, string][] = [
  ['workspace', 'The whole workspace'],
  ['tag', 'Requests carrying a tag value'],
  ['per_tag', 'Each value of a tag, on its own'],
  ['key', 'One gateway key'],
  ['per_key', 'Each gateway key, on its own'],
];
/** GET /api/budgets names the action as the YAML does; the runtime API as on_exceed. */
export const ON_EXCEED_OF = { alert: 'warn', block: 'block', clamp: 'clamp' } as const;
const USD = /^\d{1,12}(\.\d{1,12})?$/;

type Field = 'workspace' | 'scope' | 'tag_name' | 'tag_value' | 'key' | 'period' | 'usd' | 'on_exceed' | 'alert_at';

/** Which field an API error's `param` is about (`tag` and `per_tag` name the tag, `tag.feature` its value). */
function fieldOf(param: string | null): Field | null {
  if (param === null) return null;
  if (param === 'per_tag' || param === 'tag') return 'tag_name';
  if (param.startsWith('tag.')) return 'tag_value';
  if (param.startsWith('alert_at')) return 'alert_at';
  const known: Field[] = ['workspace', 'key', 'period', 'usd', 'on_exceed'];
  return known.find((f) => f === param) ?? null;
}

interface Inputs {
  workspace: HTMLSelectElement;
  scope: HTMLSelectElement;
  tag_name: HTMLInputElement;
  tag_value: HTMLInputElement;
  key: HTMLInputElement;
  period: HTMLSelectElement;
  usd: HTMLInputElement;
  on_exceed: HTMLSelectElement;
  alert_at: HTMLInputElement;
}

function inputs(ctx: AppCtx, editing: BudgetJson | null): Inputs {
  const select = (id: string, options: [string, string][], value: string) =>
    h(
      'select',
      { id },
      options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)),
    );
  return {
    workspace: select(
      'budget-workspace',
      ctx.info.workspaces.map((w) => [w.id, w.name ? `${w.name} (${w.id})` : w.id]),
      editing?.workspace ?? ctx.info.workspaces[0]?.id ?? '',
    ),
    scope: select('budget-scope', SCOPES, 'workspace'),
    tag_name: h('input', { id: 'budget-tag-name', placeholder: 'e.g. customer_id', autocomplete: 'off' }),
    tag_value: h('input', { id: 'budget-tag-value', placeholder: 'e.g. acme', autocomplete: 'off' }),
    key: h('input', { id: 'budget-key', placeholder: 'label or key id', autocomplete: 'off' }),
    period: select(
      'budget-period',
      [
        ['day', 'UTC day'],
        ['month', 'UTC month'],
      ],
      editing?.period ?? 'month',
    ),
    usd: h('input', {
      id: 'budget-usd',
      inputmode: 'decimal',
      placeholder: 'e.g. 250',
      autocomplete: 'off',
      value: editing?.limit_usd ?? '',
    }),
    on_exceed: select(
      'budget-on-exceed',
      [
        ['block', 'block: refuse what does not fit'],
        ['warn', 'warn: alert only, never refuse'],
        ['clamp', 'clamp: lower the output-token limit'],
      ],
      editing ? ON_EXCEED_OF[editing.action] : 'block',
    ),
    alert_at: h('input', {
      id: 'budget-alert-at',
      placeholder: '50, 80, 100',
      autocomplete: 'off',
      value: editing ? editing.alert_at.map((t) => String(Math.round(t * 10_000) / 100)).join(', ') : '',
    }),
  };
}

/** The request the form stands for, or the field it must not be sent with and why. */
function readForm(f: Inputs, editing: BudgetJson | null): BudgetRequest | [Field, string] {
  const usd = f.usd.value.trim();
  if (!USD.test(usd) || !/[1-9]/.test(usd)) return ['usd', 'A limit in USD above 0, such as 250 or 12.50.'];
  const thresholds = f.alert_at.value
    .split(',')
    .map((t) => t.trim().replace(/%$/, ''))
    .filter(Boolean);
  const alertAt = thresholds.map(Number).map((p) => p / 100);
  if (alertAt.some((t) => !(t > 0 && t <= 1)))
    return ['alert_at', 'Percentages of the limit above 0 and at most 100, separated by commas.'];
  const body: BudgetRequest = {
    period: f.period.value as 'day' | 'month',
    usd,
    on_exceed: f.on_exceed.value as 'warn' | 'block' | 'clamp',
    ...(alertAt.length ? { alert_at: alertAt } : {}),
  };
  if (editing) return onlyChanged(body, editing);
  const kind = f.scope.value as ScopeKind;
  const tag = f.tag_name.value.trim();
  const value = f.tag_value.value.trim();
  const key = f.key.value.trim();
  if ((kind === 'tag' || kind === 'per_tag') && !tag) return ['tag_name', 'Name the tag, such as customer_id.'];
  if (kind === 'tag' && !value) return ['tag_value', 'The tag value whose requests count.'];
  if (kind === 'key' && !key) return ['key', 'The gateway key, by its label or id.'];
  return {
    workspace: f.workspace.value,
    ...body,
    ...(kind === 'tag' ? { tag: { [tag]: value } } : {}),
    ...(kind === 'per_tag' ? { per_tag: tag } : {}),
    ...(kind === 'key' ? { key: keyIdOf(key) } : {}),
    ...(kind === 'per_key' ? { per_key: true } : {}),
  };
}

/**
 * A change sends only what the user changed: the row shown may be one value of a per-tag budget whose limit is an
 * override, and sending it back unchanged would make it the budget's limit.
 */
function onlyChanged(body: BudgetRequest, was: BudgetJson): BudgetRequest {
  const same = (a: number[] | undefined) => !a || JSON.stringify(a) === JSON.stringify(was.alert_at);
  return {
    ...(body.period !== was.period ? { period: body.period } : {}),
    ...(Number(body.usd) !== Number(was.limit_usd) ? { usd: body.usd } : {}),
    ...(body.on_exceed !== ON_EXCEED_OF[was.action] ? { on_exceed: body.on_exceed } : {}),
    ...(same(body.alert_at) ? {} : { alert_at: body.alert_at }),
  };
}

/** Shows which scope fields apply to the chosen scope. */
function showScopeFields(f: Inputs, rows: Record<Field, HTMLElement>): void {
  const kind = f.scope.value as ScopeKind;
  rows.tag_name.classList.toggle('hidden', kind !== 'tag' && kind !== 'per_tag');
  rows.tag_value.classList.toggle('hidden', kind !== 'tag');
  rows.key.classList.toggle('hidden', kind !== 'key');
}

const LABELS: Record<Field, string> = {
  workspace: 'Workspace',
  scope: 'Counts',
  tag_name: 'Tag',
  tag_value: 'Tag value',
  key: 'Gateway key',
  period: 'Period',
  usd: 'Limit (USD)',
  on_exceed: 'When it is reached',
  alert_at: 'Alert at (% of the limit)',
};

/**
 * The form, empty to create a budget or filled with `editing` (a runtime budget's row) to change it; `saved` runs
 * after the API took it. A change keeps the budget's workspace and what it counts: those make another budget.
 */
export function budgetForm(ctx: AppCtx, editing: BudgetJson | null, saved: (id: string) => void): HTMLElement {
  const f = inputs(ctx, editing);
  const errors = {} as Record<Field, HTMLElement>;
  const rows = {} as Record<Field, HTMLElement>;
  for (const name of Object.keys(LABELS) as Field[]) {
    errors[name] = h('span', { class: 'error small', dataset: { errorFor: name }, role: 'alert' });
    rows[name] = h(
      'label',
      { dataset: { field: name } },
      h('span', { class: 'muted' }, LABELS[name]),
      f[name],
      errors[name],
    );
  }
  const formError = h('p', { class: 'error', id: 'budget-form-error', role: 'alert' });
  const submit = h('button', { type: 'submit', class: 'btn primary' }, editing ? 'Save changes' : 'Create budget');
  const fixed = editing
    ? h('p', { class: 'muted', id: 'budget-editing' }, `Budget ${editing.id} (${editing.scope}).`)
    : null;
  const visible: Field[] = editing
    ? ['period', 'usd', 'on_exceed', 'alert_at']
    : [
        ...(ctx.info.workspaces.length > 1 ? (['workspace'] as Field[]) : []),
        'scope',
        'tag_name',
        'tag_value',
        'key',
        'period',
        'usd',
        'on_exceed',
        'alert_at',
      ];
  const form = h(
    'form',
    { class: 'budget-form', id: 'budget-form', novalidate: true },
    fixed,
    h(
      'div',
      { class: 'fields' },
      visible.map((n) => rows[n]),
    ),
    formError,
    submit,
  );
  f.scope.addEventListener('change', () => showScopeFields(f, rows));
  showScopeFields(f, rows);
  const show = (field: Field | null, message: string) => {
    if (field && visible.includes(field)) errors[field].textContent = message;
    else formError.textContent = message;
    (field && visible.includes(field) ? f[field] : submit).focus();
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const el of [...Object.values(errors), formError]) el.textContent = '';
    const body = readForm(f, editing);
    if (Array.isArray(body)) return show(...body);
    if (editing && Object.keys(body).length === 0) return show(null, 'Nothing changed.');
    submit.disabled = true;
    try {
      const answer = editing ? await api.changeBudget(editing.id, body) : await api.createBudget(body);
      saved(answer.id);
    } catch (err) {
      submit.disabled = false;
      if (err instanceof ApiError && err.status < 500) show(fieldOf(err.param), err.message);
      else ctx.fail(err);
    }
  });
  return form;
}
