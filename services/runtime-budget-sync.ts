/**
 * Budgets managed through the admin API reach the proxy without a restart and without a store read per request:
 * every instance reads the runtime_budgets table every budgets.runtime_refresh_ms in the background and hands a
 * workspace's budgets to the limits only when they changed. The instance that made a change refreshes at once.
 */
import type { Logger } from 'pino';
import { runtimeBudgetSchema, type BudgetConfig } from '../config/limits';
import type { RuntimeBudgetRow, RuntimeBudgetTable } from '../storage/runtime-budget-table';
import type { LimitsContext } from './workspace-limits';

export type RuntimeBudget = BudgetConfig & { id: string };

/** A stored row as the budget plugin takes it; undefined when its body no longer parses (logged, skipped). */
export function runtimeBudgetOf(row: RuntimeBudgetRow): RuntimeBudget | undefined {
  let body: unknown;
  try {
    body = JSON.parse(row.body);
  } catch {
    return undefined;
  }
  const parsed = runtimeBudgetSchema.safeParse(body);
  return parsed.success ? { ...parsed.data, id: row.id } : undefined;
}

export class RuntimeBudgetSync {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Each workspace's budgets as last applied, to hand over only what changed. */
  private applied = new Map<string, string>();
  private lastWarning = 0;

  constructor(
    private readonly table: RuntimeBudgetTable,
    private readonly limits: Pick<LimitsContext, 'setRuntimeBudgets'>,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {}

  start(): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), this.intervalMs).unref();
    return this.refresh();
  }

  /** Reads the table and applies it; a read already under way is waited for, then read again. */
  async refresh(): Promise<void> {
    const previous = this.running;
    const run = (async () => {
      await previous?.catch(() => undefined);
      await this.readAndApply();
    })();
    this.running = run;
    return run;
  }

  private async readAndApply(): Promise<void> {
    let rows: RuntimeBudgetRow[];
    try {
      rows = await this.table.list();
    } catch (err) {
      // The budgets last read stay in force until the store answers again.
      if (Date.now() - this.lastWarning > 10_000) {
        this.lastWarning = Date.now();
        this.log.warn({ err }, 'runtime budgets: the usage store could not be read; keeping the budgets last read');
      }
      return;
    }
    const byWorkspace = new Map<string, RuntimeBudget[]>();
    for (const row of rows) {
      const budget = runtimeBudgetOf(row);
      if (!budget) {
        this.log.warn({ budget: row.id }, 'runtime budget skipped: its stored body is not a valid budget');
        continue;
      }
      const list = byWorkspace.get(row.workspace) ?? [];
      list.push(budget);
      byWorkspace.set(row.workspace, list);
    }
    const changed = new Map<string, RuntimeBudget[]>();
    for (const ws of new Set([...this.applied.keys(), ...byWorkspace.keys()])) {
      const list = byWorkspace.get(ws) ?? [];
      const json = JSON.stringify(list);
      if (this.applied.get(ws) === json) continue;
      changed.set(ws, list);
      if (list.length) this.applied.set(ws, json);
      else this.applied.delete(ws);
    }
    if (changed.size > 0) this.limits.setRuntimeBudgets(changed);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
