/**
 * Spend freezes (migration 013's spend_freezes) on either store: a scope of a workspace ("workspace", "key_id=<id>"
 * or "<tag>=<value>") refused after a spend anomaly until lifted or expired. Every instance reads the active ones at
 * each refresh; a freeze's id names its anomaly episode, so instances that saw the same episode store one row.
 */
import { toNumber, toNumberOrNull, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export interface SpendFreezeRow {
  id: string;
  workspace: string;
  scope: string;
  /** Why, in a sentence: the rule and the spend that fired it. */
  reason: string;
  createdAt: number;
  /** null: until lifted. */
  expiresAt: number | null;
  liftedAt: number | null;
}

const COLUMNS = 'id, workspace, scope, reason, created_at, expires_at, lifted_at';

export class SpendFreezeTable {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  /** The freezes in force at `now`. */
  async active(now: number): Promise<SpendFreezeRow[]> {
    const rows = await this.run(
      `SELECT ${COLUMNS} FROM spend_freezes WHERE lifted_at IS NULL AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id`,
      [now],
    );
    return rows.map(rowFrom);
  }

  /** Every freeze, newest first: active, lifted and expired. */
  async list(limit: number): Promise<SpendFreezeRow[]> {
    const rows = await this.run(`SELECT ${COLUMNS} FROM spend_freezes ORDER BY created_at DESC, id LIMIT ?`, [limit]);
    return rows.map(rowFrom);
  }

  /** True when this id was new (another instance may have stored the same episode's freeze first). */
  async insert(row: SpendFreezeRow): Promise<boolean> {
    const rows = await this.run(
      `INSERT INTO spend_freezes (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [row.id, row.workspace, row.scope, row.reason, row.createdAt, row.expiresAt, row.liftedAt],
    );
    return rows.length > 0;
  }

  async get(id: string): Promise<SpendFreezeRow | undefined> {
    const rows = await this.run(`SELECT ${COLUMNS} FROM spend_freezes WHERE id = ?`, [id]);
    return rows.length === 0 ? undefined : rowFrom(rows[0]);
  }

  /** Lifts a freeze still in force; returns the row as it is after (lifted before, or expired: unchanged). */
  async lift(id: string, now: number): Promise<SpendFreezeRow | undefined> {
    await this.run('UPDATE spend_freezes SET lifted_at = ? WHERE id = ? AND lifted_at IS NULL RETURNING id', [now, id]);
    return this.get(id);
  }
}

/** active, lifted or expired at `now`. */
export function freezeState(row: SpendFreezeRow, now: number): 'active' | 'lifted' | 'expired' {
  if (row.liftedAt !== null) return 'lifted';
  return row.expiresAt !== null && row.expiresAt <= now ? 'expired' : 'active';
}

function rowFrom(r: Record<string, unknown>): SpendFreezeRow {
  return {
    id: String(r.id),
    workspace: String(r.workspace),
    scope: String(r.scope),
    reason: String(r.reason),
    createdAt: toNumber(r.created_at),
    expiresAt: toNumberOrNull(r.expires_at),
    liftedAt: toNumberOrNull(r.lifted_at),
  };
}
