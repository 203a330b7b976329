/**
 * Gateway keys page by page, oldest first (created_at, id), for the admin API: a store may hold many keys, and one
 * answer holds at most a page of them.
 */
import type { SqlDialect } from '../dialect';
import { KEY_COLUMNS, keyFromRow } from '../keys';
import type { GatewayKey } from '../store';
import type { Exec } from './run';

export interface KeyPageQuery {
  workspace?: string;
  limit: number;
  /** The last key of the previous page. */
  after?: { createdAt: number; id: string };
}

export interface KeyPage {
  keys: GatewayKey[];
  /** Whether keys follow this page. */
  more: boolean;
}

export async function keyPage(d: SqlDialect, exec: Exec, q: KeyPageQuery): Promise<KeyPage> {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (q.workspace !== undefined) {
    where.push('workspace_id = ?');
    params.push(q.workspace);
  }
  if (q.after) {
    where.push('(created_at > ? OR (created_at = ? AND id > ?))');
    params.push(q.after.createdAt, q.after.createdAt, q.after.id);
  }
  const sql = `SELECT ${KEY_COLUMNS} FROM keys${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id LIMIT ?`;
  const rows = await exec({ sql: d.sql(sql), params: [...params, q.limit + 1] });
  return { keys: rows.slice(0, q.limit).map(keyFromRow), more: rows.length > q.limit };
}
