/**
 * POST /api/budgets, PATCH and DELETE /api/budgets/:id: budgets a team manages at runtime, stored in the usage store
 * and read by every instance (services/runtime-budget-sync.ts). Budgets from the YAML (ids yaml:...) are read-only.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type Router from '@koa/router';
import { runtimeBudgetSchema } from '../config/limits';
import type { WorkspaceEntry } from '../config/schema';
import { parseJsonBody, readBody } from '../intake/body';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { RuntimeBudgetRow, RuntimeBudgetTable } from '../storage/runtime-budget-table';
import type { UsageStore } from '../storage/store';

/** What a user writes: the YAML budget's fields, with on_exceed (warn, block or clamp) standing for action. */
const ON_EXCEED = { warn: 'alert', block: 'block', clamp: 'clamp' } as const;
const ON_EXCEED_OF = { alert: 'warn', block: 'block', clamp: 'clamp' } as const;
const MAX_BODY = 64 * 1024;

export interface BudgetRouteDeps {
  store: UsageStore;
  table: RuntimeBudgetTable;
  workspaces: readonly WorkspaceEntry[];
  /** Called after a change here, so this instance applies it at once. */
  onBudgetsChanged: () => Promise<void>;
}

export function runtimeBudgetJson(row: RuntimeBudgetRow) {
  const body = JSON.parse(row.body) as Record<string, unknown>;
  const { action, ...rest } = body;
  return {
    id: row.id,
    workspace: row.workspace,
    source: 'runtime',
    ...rest,
    on_exceed: ON_EXCEED_OF[(action as keyof typeof ON_EXCEED_OF | undefined) ?? 'block'],
    created_at: new Date(row.createdAt).toISOString(),
    updated_at: new Date(row.updatedAt).toISOString(),
  };
}

export function registerBudgetRoutes(router: Router, deps: BudgetRouteDeps): void {
  const { table, onBudgetsChanged } = deps;

  router.post('/budgets', async (ctx) => {
    const input = await bodyOf(ctx.req, ctx.request.length);
    const workspace = workspaceOf(deps.workspaces, input.workspace);
    const budget = await validBudget(deps, workspace, input);
    const now = Date.now();
    const row = {
      id: `bud_${randomBytes(6).toString('hex')}`,
      workspace,
      body: budget,
      createdAt: now,
      updatedAt: now,
    };
    await table.insert(row);
    await onBudgetsChanged();
    ctx.status = 201;
    ctx.body = runtimeBudgetJson(row);
  });

  router.patch('/budgets/:id', async (ctx) => {
    const current = await ownBudget(table, ctx.params.id);
    const input = await bodyOf(ctx.req, ctx.request.length);
    if (input.workspace !== undefined && input.workspace !== current.workspace)
      throw new GatewayError('invalid_budget', 'A budget cannot move to another workspace: create a new one.', {
        param: 'workspace',
      });
    // What the PATCH leaves out stays as it was, on_exceed included.
    const merged = { ...runtimeBudgetJson(current), ...input };
    const budget = await validBudget(deps, current.workspace, merged);
    const row = await table.update(current.id, budget, Date.now());
    if (!row) throw notFound(current.id);
    await onBudgetsChanged();
    ctx.body = runtimeBudgetJson(row);
  });

  router.delete('/budgets/:id', async (ctx) => {
    const current = await ownBudget(table, ctx.params.id);
    if (!(await table.delete(current.id))) throw notFound(current.id);
    await onBudgetsChanged();
    ctx.body = { id: current.id, deleted: true };
  });
}

async function bodyOf(req: IncomingMessage, length: number | undefined) {
  const body = length ? parseJsonBody(await readBody(req, MAX_BODY)) : {};
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new GatewayError('invalid_budget', 'The body must be a JSON object with the budget fields.');
  return body as Record<string, unknown>;
}

function notFound(id: string): GatewayError {
  return new GatewayError('budget_not_found', `No runtime budget with id ${truncate(id, 100)}`);
}

/** A runtime budget's row; a YAML budget's id is refused as read-only. */
async function ownBudget(table: RuntimeBudgetTable, id: string): Promise<RuntimeBudgetRow> {
  if (id.startsWith('yaml:'))
    throw new GatewayError(
      'budget_read_only',
      `Budget ${truncate(id, 100)} comes from gateway.config.yaml; change it there (runtime budgets have ids bud_...).`,
    );
  const row = await table.get(id);
  if (!row) throw notFound(id);
  return row;
}

function workspaceOf(workspaces: readonly WorkspaceEntry[], value: unknown): string {
  const workspace = value ?? workspaces[0]?.id;
  if (typeof workspace === 'string' && workspaces.some((w) => w.id === workspace)) return workspace;
  throw new GatewayError(
    'invalid_budget',
    `Unknown workspace "${truncate(String(workspace), 64)}"; workspaces are declared in gateway.config.yaml (${workspaces.map((w) => w.id).join(', ')}).`,
    { param: 'workspace' },
  );
}

/** The budget as stored (JSON), once its fields, its key and its tag are known to be valid. */
async function validBudget(deps: BudgetRouteDeps, workspace: string, input: Record<string, unknown>): Promise<string> {
  const { workspace: _w, id: _i, source: _s, created_at: _c, updated_at: _u, on_exceed, ...fields } = input;
  if (on_exceed !== undefined && !(typeof on_exceed === 'string' && on_exceed in ON_EXCEED))
    throw new GatewayError('invalid_budget', 'on_exceed must be warn, block or clamp', { param: 'on_exceed' });
  const parsed = runtimeBudgetSchema.safeParse({
    ...fields,
    ...(on_exceed === undefined ? {} : { action: ON_EXCEED[on_exceed as keyof typeof ON_EXCEED] }),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.join('.');
    throw new GatewayError('invalid_budget', `${path ? `${path}: ` : ''}${issue.message}`, {
      param: path || undefined,
    });
  }
  const budget = parsed.data;
  const declared = deps.workspaces.find((w) => w.id === workspace)?.keys ?? [];
  if (
    budget.key &&
    !declared.some((k) => k.id === budget.key) &&
    !(await deps.store.listKeys(workspace)).some((k) => k.id === budget.key && !k.revokedAt)
  )
    throw new GatewayError(
      'invalid_budget',
      `Unknown gateway key "${truncate(budget.key, 64)}" in workspace ${workspace} (GET /api/keys lists them).`,
      { param: 'key' },
    );
  const tags = [...Object.keys(budget.tag ?? {}), ...(budget.per_tag ? [budget.per_tag] : [])];
  if (tags.length > 0) {
    const known = new Set([
      ...(await deps.store.listTagKeys()),
      ...(deps.workspaces.find((w) => w.id === workspace)?.limits.required_tags ?? []),
    ]);
    const unknown = tags.find((t) => !known.has(t));
    if (unknown)
      throw new GatewayError(
        'invalid_budget',
        `Unknown tag "${unknown}": no request has carried it and the workspace does not require it.`,
        { param: budget.per_tag === unknown ? 'per_tag' : 'tag' },
      );
  }
  return JSON.stringify(budget);
}
