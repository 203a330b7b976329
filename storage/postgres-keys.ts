/**
 * Key writes on PostgreSQL. Each runs in a transaction that first takes KEY_WRITE_LOCK, so that the change
 * sequences (storage/keys.ts) of concurrent writers, on this instance or another, commit in order.
 */
import type { Pool } from 'pg';
import { withClient } from './postgres-pool';
import { KEY_COLUMNS, NEXT_KEY_SEQ, checkNewKey } from './keys';
import type { GatewayKey, NewGatewayKey } from './store';

const KEY_WRITE_LOCK = 7_162_022_011;

async function inKeyTransaction<T>(pool: Pool, fn: (query: Pool['query']) => Promise<T>): Promise<T> {
  return withClient(pool, async (c) => {
    await c.query('BEGIN');
    try {
      await c.query('SELECT pg_advisory_xact_lock($1)', [KEY_WRITE_LOCK]);
      const result = await fn(c.query.bind(c) as Pool['query']);
      await c.query('COMMIT');
      return result;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/** All of `keys` in one statement: one round trip whatever their number. */
export async function insertPostgresKeys(pool: Pool, keys: readonly NewGatewayKey[]): Promise<GatewayKey[]> {
  const now = Date.now();
  const rows = keys.map((k) => checkNewKey(k, now));
  if (rows.length === 0) return rows;
  await inKeyTransaction(pool, (query) =>
    query(
      `INSERT INTO keys (${KEY_COLUMNS}, updated_seq)
       SELECT u.id, u.workspace_id, u.label, u.hash, u.created_at, NULL, NULL, base.seq + u.n - 1
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
            WITH ORDINALITY AS u (id, workspace_id, label, hash, created_at, n),
            (SELECT ${NEXT_KEY_SEQ} AS seq) AS base`,
      [
        rows.map((k) => k.id),
        rows.map((k) => k.workspaceId),
        rows.map((k) => k.label),
        rows.map((k) => k.hash),
        rows.map((k) => k.createdAt),
      ],
    ),
  );
  return rows;
}

export async function revokePostgresKey(pool: Pool, id: string, at: number): Promise<boolean> {
  const res = await inKeyTransaction(pool, (query) =>
    query(`UPDATE keys SET revoked_at = $1, updated_seq = ${NEXT_KEY_SEQ} WHERE id = $2 AND revoked_at IS NULL`, [
      at,
      id,
    ]),
  );
  return res.rowCount === 1;
}
