/**
 * The scheduled reconciliation's claims (migration 015) on either store: an instance takes a provider's run for a
 * day with one conditional UPDATE (the lease is free or expired, and that day has not run yet), so that among the
 * instances sharing the store exactly one runs it; the others see the claim or the finished day and skip. Every statement
 * returns rows (RETURNING), as the store's exec expects.
 */
import type { SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export class ReconciliationSchedule {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  /** Whether `owner` now holds the run of `provider` for `day` (a UTC day) until `until`. */
  async claim(provider: string, day: string, owner: string, now: number, until: number): Promise<boolean> {
    await this.run(
      'INSERT INTO reconciliation_schedule (provider) VALUES (?) ON CONFLICT (provider) DO NOTHING RETURNING provider',
      [provider],
    );
    const rows = await this.run(
      `UPDATE reconciliation_schedule SET claimed_by = ?, claimed_until = ?
WHERE provider = ? AND claimed_until <= ? AND (last_day IS NULL OR last_day < ?) RETURNING provider`,
      [owner, until, provider, now, day],
    );
    return rows.length === 1;
  }

  /** The claimed run ended: `day` done when it succeeded; otherwise the lease stays until `retryAt`. */
  async finish(provider: string, owner: string, day: string | null, retryAt: number): Promise<void> {
    await this.run(
      day === null
        ? 'UPDATE reconciliation_schedule SET claimed_until = ? WHERE provider = ? AND claimed_by = ? RETURNING provider'
        : 'UPDATE reconciliation_schedule SET last_day = ?, claimed_until = 0 WHERE provider = ? AND claimed_by = ? RETURNING provider',
      [day ?? retryAt, provider, owner],
    );
  }
}
