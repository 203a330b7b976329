/**
 * The budgets managed through the admin API (migration 013) on either store: every instance reads them all at each
 * refresh, so the table holds a handful of rows per workspace. Each write is one statement, atomic on its own.
 */
import { toNumber, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export interface RuntimeBudgetRow {
  id: string;
  workspace: string;
  /** The budget's fields as JSON (config/limits.ts). */
  body: string;
  createdAt: number;
  updatedAt: number;
}

const COLUMNS = 'id, workspace, body, created_at, updated_at';

export class RuntimeBudgetTable {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  async list(): Promise<RuntimeBudgetRow[]> {
    return (await this.run(`SELECT ${COLUMNS} FROM runtime_budgets ORDER BY id`, [])).map(rowFrom);
  }

  async insert(row: RuntimeBudgetRow): Promise<void> {
    await this.run(
      'INSERT INTO runtime_budgets (id, workspace, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
      [row.id, row.workspace, row.body, row.createdAt, row.updatedAt],
    );
  }

  /** The changed row, or undefined when no budget has this id. */
  async update(id: string, body: string, now: number): Promise<RuntimeBudgetRow | undefined> {
    const rows = await this.run(
      `UPDATE runtime_budgets SET body = ?, updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
      [body, now, id],
    );
    return rows.length === 0 ? undefined : rowFrom(rows[0]);
  }

  async get(id: string): Promise<RuntimeBudgetRow | undefined> {
    const rows = await this.run(`SELECT ${COLUMNS} FROM runtime_budgets WHERE id = ?`, [id]);
    return rows.length === 0 ? undefined : rowFrom(rows[0]);
  }

  /** True when a budget was deleted. */
  async delete(id: string): Promise<boolean> {
    return (await this.run('DELETE FROM runtime_budgets WHERE id = ? RETURNING id', [id])).length > 0;
  }
}

function rowFrom(r: Record<string, unknown>): RuntimeBudgetRow {
  return {
    id: String(r.id),
    workspace: String(r.workspace),
    body: String(r.body),
    createdAt: toNumber(r.created_at),
    updatedAt: toNumber(r.updated_at),
  };
}
