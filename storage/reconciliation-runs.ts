/**
 * Reconciliation runs (migration 014) on either store: each run of reconcile/ is stored once, finished, with what
 * it fetched (pages per endpoint), its outcome and its report as JSON. Read newest first, a page at a time; the
 * admin API reads them on the reader thread through the same class.
 */
import { toNumber, type SqlValue } from './codec';
import type { SqlDialect } from './dialect';
import type { Exec } from './query/run';

export interface NewReconciliationRun {
  provider: string;
  rangeFrom: number;
  rangeTo: number;
  startedAt: number;
  finishedAt: number;
  /** Where the provider's figures came from: "api" or "csv:<file name>". */
  source: string;
  status: 'ok' | 'failed';
  error: string | null;
  /** The run's drift over its final days, a decimal share; null when failed or nothing was final. */
  drift: string | null;
  pages: Record<string, number>;
  /** The report as JSON; null when failed. */
  report: string | null;
}

export interface ReconciliationRunRow extends NewReconciliationRun {
  id: number;
}

const SUMMARY = 'id, provider, range_from, range_to, started_at, finished_at, source, status, error, drift, pages';

export class ReconciliationRuns {
  constructor(
    private readonly dialect: SqlDialect,
    private readonly exec: Exec,
  ) {}

  private run(sql: string, params: SqlValue[]): Promise<Record<string, unknown>[]> {
    return this.exec({ sql: this.dialect.sql(sql), params: params.map((p) => this.dialect.bind(p)) as SqlValue[] });
  }

  /** Stores a finished run; its id. */
  async insert(r: NewReconciliationRun): Promise<number> {
    const rows = await this.run(
      `INSERT INTO reconciliation_runs (provider, range_from, range_to, started_at, finished_at, source, status, error, drift, pages, report)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      [
        r.provider,
        r.rangeFrom,
        r.rangeTo,
        r.startedAt,
        r.finishedAt,
        r.source,
        r.status,
        r.error,
        r.drift,
        JSON.stringify(r.pages),
        r.report,
      ],
    );
    return toNumber(rows[0].id);
  }

  /** Runs newest first, without their reports: `limit` of them before `beforeId` (all when null), of one provider. */
  async list(limit: number, beforeId: number | null, provider?: string): Promise<ReconciliationRunRow[]> {
    const rows = await this.run(
      `SELECT ${SUMMARY} FROM reconciliation_runs WHERE id < ?${provider ? ' AND provider = ?' : ''} ORDER BY id DESC LIMIT ?`,
      [beforeId ?? Number.MAX_SAFE_INTEGER, ...(provider ? [provider] : []), limit],
    );
    return rows.map((r) => rowFrom(r, null));
  }

  /** The newest run that succeeded (of one provider), with its report. */
  async latestReport(provider?: string): Promise<ReconciliationRunRow | undefined> {
    const rows = await this.run(
      `SELECT id FROM reconciliation_runs WHERE status = 'ok'${provider ? ' AND provider = ?' : ''} ORDER BY id DESC LIMIT 1`,
      provider ? [provider] : [],
    );
    return rows.length === 0 ? undefined : this.get(toNumber(rows[0].id));
  }

  /** Each provider's newest successful run: its drift and when it finished. */
  async latestPerProvider(): Promise<{ provider: string; drift: string | null; finishedAt: number }[]> {
    const rows = await this.run(
      `SELECT provider, drift, finished_at FROM reconciliation_runs r WHERE status = 'ok'
AND id = (SELECT max(id) FROM reconciliation_runs s WHERE s.provider = r.provider AND s.status = 'ok')`,
      [],
    );
    return rows.map((r) => ({
      provider: String(r.provider),
      drift: r.drift === null ? null : String(r.drift),
      finishedAt: toNumber(r.finished_at),
    }));
  }

  /** One run with its report. */
  async get(id: number): Promise<ReconciliationRunRow | undefined> {
    const rows = await this.run(`SELECT ${SUMMARY}, report FROM reconciliation_runs WHERE id = ?`, [id]);
    return rows.length === 0 ? undefined : rowFrom(rows[0], rows[0].report === null ? null : String(rows[0].report));
  }
}

function rowFrom(r: Record<string, unknown>, report: string | null): ReconciliationRunRow {
  return {
    id: toNumber(r.id),
    provider: String(r.provider),
    rangeFrom: toNumber(r.range_from),
    rangeTo: toNumber(r.range_to),
    startedAt: toNumber(r.started_at),
    finishedAt: toNumber(r.finished_at),
    source: String(r.source),
    status: r.status === 'ok' ? 'ok' : 'failed',
    error: r.error === null ? null : String(r.error),
    drift: r.drift === null ? null : String(r.drift),
    pages: JSON.parse(String(r.pages)) as Record<string, number>,
    report,
  };
}
