/** The range picker, the group-by picker and the stacked filters, shared by the usage and requests views. */
import type { AppCtx } from './context.js';
import { addFilter, dimLabel } from './context.js';
import { h } from './dom.js';
import { fromUtcInput, utcInput } from './format.js';
import { PRESETS, resolveRange, type Range } from './state.js';
import { isKeyDim, keyIdOf, shownValue, valueTitle } from './key-names.js';

export function toolbar(ctx: AppCtx, opts: { groupBy: boolean }): HTMLElement {
  return h('section', { class: 'toolbar' }, rangeRow(ctx, opts), filtersRow(ctx, opts));
}

/** The range presets, the custom range (UTC) and the range shown, then the group-by picker when the view has one. */
function rangeRow(ctx: AppCtx, opts: { groupBy: boolean }): HTMLElement {
  const s = ctx.state;
  const range = resolveRange(s);
  const custom = customRangeForm(ctx, range);
  const zone = h(
    'span',
    { class: 'muted small', id: 'range-shown', title: 'Days, months and buckets are UTC' },
    `${utcInput(range.from).replace('T', ' ')} → ${utcInput(range.to).replace('T', ' ')} UTC`,
  );
  const row1 = h('div', { class: 'toolbar-row' }, presetButtons(ctx, custom), custom, zone);
  if (opts.groupBy) {
    const select = h(
      'select',
      { id: 'group-by', 'aria-label': 'Group by', onchange: () => ctx.update({ groupBy: select.value }) },
      ctx.dims.map((d) => h('option', { value: d, selected: d === s.groupBy }, dimLabel(d))),
    );
    row1.append(h('label', { class: 'group-by' }, h('span', { class: 'muted' }, 'Group by'), select));
  }
  return row1;
}

/** From/to inputs in UTC, hidden unless the range is custom; an end not after the start is refused. */
function customRangeForm(ctx: AppCtx, range: Range): HTMLFormElement {
  const s = ctx.state;
  const custom = h('form', { class: `custom-range${s.preset === 'custom' ? '' : ' hidden'}`, id: 'custom-range' });
  const fromInput = h('input', {
    type: 'datetime-local',
    id: 'range-from',
    value: utcInput(s.from ?? range.from),
    required: true,
  });
  const toInput = h('input', {
    type: 'datetime-local',
    id: 'range-to',
    value: utcInput(s.to ?? range.to),
    required: true,
  });
  custom.append(
    h('span', { class: 'muted small' }, 'UTC'),
    fromInput,
    h('span', { class: 'muted' }, '→'),
    toInput,
    h('button', { type: 'submit', class: 'btn small' }, 'Apply'),
  );
  custom.addEventListener('submit', (e) => {
    e.preventDefault();
    const from = fromUtcInput(fromInput.value);
    const to = fromUtcInput(toInput.value);
    if (!(from < to)) {
      toInput.setCustomValidity('The end must be after the start');
      toInput.reportValidity();
      return;
    }
    ctx.update({ preset: 'custom', from, to });
  });
  return custom;
}

/** One button per preset, and Custom, which shows or hides the custom range form. */
function presetButtons(ctx: AppCtx, custom: HTMLElement): HTMLElement {
  const s = ctx.state;
  return h(
    'div',
    { class: 'segmented', role: 'group', 'aria-label': 'Time range' },
    PRESETS.map((p) =>
      h(
        'button',
        {
          type: 'button',
          class: s.preset === p.id ? 'active' : '',
          dataset: { range: p.id },
          onclick: () => ctx.update({ preset: p.id }),
        },
        p.label,
      ),
    ),
    h(
      'button',
      {
        type: 'button',
        class: s.preset === 'custom' ? 'active' : '',
        dataset: { range: 'custom' },
        onclick: () => custom.classList.toggle('hidden'),
      },
      'Custom',
    ),
  );
}

/** The filter chips (each removable), Clear all, and the form that adds a filter. */
function filtersRow(ctx: AppCtx, opts: { groupBy: boolean }): HTMLElement {
  const s = ctx.state;
  const chips = s.filters.map(([dim, value]) =>
    h(
      'span',
      { class: 'chip', dataset: { filter: dim, value }, title: valueTitle(dim, value) },
      h('span', { class: 'chip-dim' }, dimLabel(dim)),
      ' = ',
      h('strong', {}, shownValue(dim, value)),
      h(
        'button',
        {
          type: 'button',
          class: 'chip-x',
          title: `Remove the filter on ${dim}`,
          'aria-label': `Remove the filter on ${dim}`,
          onclick: () => ctx.update({ filters: s.filters.filter(([d]) => d !== dim) }),
        },
        '×',
      ),
    ),
  );
  return h(
    'div',
    { class: 'toolbar-row filters' },
    h('span', { class: 'muted' }, 'Filters'),
    chips.length
      ? chips
      : h(
          'span',
          { class: 'muted small' },
          opts.groupBy ? 'none — click a row to filter by it' : 'none — click a tag to filter by it',
        ),
    chips.length > 1
      ? h('button', { type: 'button', class: 'link', onclick: () => ctx.update({ filters: [] }) }, 'Clear all')
      : null,
    h('span', { class: 'spacer' }),
    addFilterForm(ctx),
  );
}

/** A dimension and a value to filter by. */
function addFilterForm(ctx: AppCtx): HTMLFormElement {
  const dimSelect = h(
    'select',
    { id: 'filter-dim', 'aria-label': 'Filter dimension' },
    ctx.dims.map((d) => h('option', { value: d }, dimLabel(d))),
  );
  const valueInput = h('input', {
    id: 'filter-value',
    placeholder: 'value',
    'aria-label': 'Filter value',
    size: 14,
    autocomplete: 'off',
  });
  const addForm = h(
    'form',
    { class: 'add-filter' },
    dimSelect,
    valueInput,
    h('button', { type: 'submit', class: 'btn small' }, 'Add filter'),
  );
  addForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = valueInput.value.trim();
    // A key is typed by its label (as shown) or its id; the filter holds the id.
    if (value) addFilter(ctx, dimSelect.value, isKeyDim(dimSelect.value) ? keyIdOf(value) : value);
  });
  return addForm;
}
