/**
 * The repricing audit (migration 015) on either store: what each applied `usage reprice` changed and why, so that a
 * period repriced after a price change stays auditable. Costs are exact USD decimal strings.
 */
import { toNumber, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export interface RepriceLogEntry {
  at: number;
  /** Why: the reason given, or the reconciliation run the repricing fixes. */
  reason: string;
  rangeFrom: number | null;
  rangeTo: number | null;
  scanned: number;
  changed: number;
  /** The known cost of the changed records before and after. */
  costBefore: string;
  costAfter: string;
  /** "old version -> new version": records moved so. */
  versions: Record<string, number>;
}

export class RepriceLog {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  async insert(e: RepriceLogEntry): Promise<number> {
    const rows = await this.run(
      `INSERT INTO reprice_log (at, reason, range_from, range_to, scanned, changed, cost_before, cost_after, versions)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      [
        e.at,
        e.reason,
        e.rangeFrom,
        e.rangeTo,
        e.scanned,
        e.changed,
        e.costBefore,
        e.costAfter,
        JSON.stringify(e.versions),
      ],
    );
    return toNumber(rows[0].id);
  }

  /** The newest entries first. */
  async list(limit: number): Promise<(RepriceLogEntry & { id: number })[]> {
    const rows = await this.run('SELECT * FROM reprice_log ORDER BY id DESC LIMIT ?', [limit]);
    return rows.map((r) => ({
      id: toNumber(r.id),
      at: toNumber(r.at),
      reason: String(r.reason),
      rangeFrom: r.range_from === null ? null : toNumber(r.range_from),
      rangeTo: r.range_to === null ? null : toNumber(r.range_to),
      scanned: toNumber(r.scanned),
      changed: toNumber(r.changed),
      costBefore: String(r.cost_before),
      costAfter: String(r.cost_after),
      versions: JSON.parse(String(r.versions)) as Record<string, number>,
    }));
  }
}
