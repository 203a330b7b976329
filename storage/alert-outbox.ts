/**
 * The alert outbox (migration 010) on either store: alerts wait here until their channel answered, so a restart
 * delivers them later, and every instance sharing the store sends each one once. The SQL is the same on both
 * dialects (ON CONFLICT, RETURNING); each write is one statement, atomic on its own.
 */
import { toNumber, toNumberOrNull, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export interface OutboxRow {
  seq: number;
  alertId: string;
  channel: string;
  kind: string;
  workspace: string | null;
  createdAt: number;
  /** The alert as JSON. */
  body: string;
  state: 'pending' | 'sent';
  attempts: number;
  nextAttemptAt: number;
  sentAt: number | null;
  lastError: string | null;
}

export interface NewOutboxAlert {
  alertId: string;
  kind: string;
  workspace: string | null;
  createdAt: number;
  body: string;
}

const COLUMNS =
  'seq, alert_id, channel, kind, workspace, created_at, body, state, attempts, next_attempt_at, sent_at, last_error';

export class AlertOutbox {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  /** Stores the alert once per channel; an alert_id already stored for a channel is left alone. Rows added. */
  async enqueue(alert: NewOutboxAlert, channels: readonly string[]): Promise<number> {
    let added = 0;
    for (const channel of channels) {
      const rows = await this.run(
        `INSERT INTO alert_outbox (alert_id, channel, kind, workspace, created_at, body, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (alert_id, channel) DO NOTHING RETURNING seq`,
        [alert.alertId, channel, alert.kind, alert.workspace, alert.createdAt, alert.body, alert.createdAt],
      );
      added += rows.length;
    }
    return added;
  }

  /**
   * Claims the channel's oldest undelivered alert for `owner` until `until`, when it is due and no other instance
   * holds it. Only the oldest is ever claimed: alerts go out in order, and one instance sends at a time.
   */
  async claimNext(channel: string, owner: string, now: number, until: number): Promise<OutboxRow | undefined> {
    // A read first: an idle or waiting queue is looked at without taking SQLite's write lock (the writer thread's).
    const head = await this.run(
      `SELECT seq, claimed_until, next_attempt_at FROM alert_outbox WHERE channel = ? AND state = 'pending' ORDER BY seq LIMIT 1`,
      [channel],
    );
    if (head.length === 0 || toNumber(head[0].claimed_until) > now || toNumber(head[0].next_attempt_at) > now)
      return undefined;
    const rows = await this.run(
      `UPDATE alert_outbox SET claimed_by = ?, claimed_until = ?
WHERE seq = ? AND state = 'pending' AND claimed_until <= ? AND next_attempt_at <= ?
RETURNING ${COLUMNS}`,
      [owner, until, toNumber(head[0].seq), now, now],
    );
    return rows.length === 0 ? undefined : rowFrom(rows[0]);
  }

  async markSent(seq: number, owner: string, now: number): Promise<void> {
    await this.run(
      `UPDATE alert_outbox SET state = 'sent', sent_at = ?, attempts = attempts + 1, claimed_until = 0, last_error = NULL
WHERE seq = ? AND claimed_by = ? RETURNING seq`,
      [now, seq, owner],
    );
  }

  /** A failed attempt: the alert stays first in its channel's queue, due again at `retryAt`. */
  async markFailed(seq: number, owner: string, retryAt: number, error: string): Promise<void> {
    await this.run(
      `UPDATE alert_outbox SET attempts = attempts + 1, next_attempt_at = ?, claimed_until = 0, last_error = ?
WHERE seq = ? AND claimed_by = ? RETURNING seq`,
      [retryAt, error.slice(0, 500), seq, owner],
    );
  }

  /** The history, newest first, `limit` rows before `beforeSeq` (all when null). */
  async list(limit: number, beforeSeq: number | null): Promise<OutboxRow[]> {
    const rows = await this.run(`SELECT ${COLUMNS} FROM alert_outbox WHERE seq < ? ORDER BY seq DESC LIMIT ?`, [
      beforeSeq ?? Number.MAX_SAFE_INTEGER,
      limit,
    ]);
    return rows.map(rowFrom);
  }
}

function rowFrom(r: Record<string, unknown>): OutboxRow {
  return {
    seq: toNumber(r.seq),
    alertId: String(r.alert_id),
    channel: String(r.channel),
    kind: String(r.kind),
    workspace: r.workspace === null ? null : String(r.workspace),
    createdAt: toNumber(r.created_at),
    body: String(r.body),
    state: r.state === 'sent' ? 'sent' : 'pending',
    attempts: toNumber(r.attempts),
    nextAttemptAt: toNumber(r.next_attempt_at),
    sentAt: toNumberOrNull(r.sent_at),
    lastError: r.last_error === null ? null : String(r.last_error),
  };
}
