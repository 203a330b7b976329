/** What every view gets from the shell: the view state, the dimension list, the gateway info. */
import type { InfoJson } from './api.js';
import type { ViewState } from './state.js';

export type ViewName = 'usage' | 'requests' | 'latency' | 'budgets' | 'statement' | 'reconciliation' | 'keys';

export interface AppCtx {
  state: ViewState;
  /** Group-by choices in picker order. */
  dims: string[];
  info: InfoJson;
  /** Changes the view state, saves it and renders the current view again. */
  update(patch: Partial<ViewState>): void;
  navigate(view: ViewName): void;
  /** Shows an error from a failed API call (a refused token signs out instead). */
  fail(err: unknown): void;
}

/** Display name of a dimension. */
export function dimLabel(dim: string): string {
  if (dim.startsWith('tag:')) return `${dim.slice(4)} (tag)`;
  return { requested_model: 'requested model', served_model: 'served model', key_id: 'key' }[dim] ?? dim;
}

/** Adds a filter and moves the grouping on to the next dimension not yet filtered (drill-down). */
export function addFilter(ctx: AppCtx, dim: string, value: string): void {
  const filters = ctx.state.filters.filter(([d]) => d !== dim);
  filters.push([dim, value]);
  const used = new Set(filters.map(([d]) => d));
  const groupBy = used.has(ctx.state.groupBy)
    ? (ctx.dims.find((d) => !used.has(d)) ?? ctx.state.groupBy)
    : ctx.state.groupBy;
  ctx.update({ filters, groupBy });
}
