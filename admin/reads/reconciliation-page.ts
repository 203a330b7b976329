/**
 * The body of GET /api/reconciliation, built on the reader thread: a page of the stored reconciliation runs (newest
 * first, without their reports) and a page of the lines of one report (the newest successful run's, or the run asked
 * for). A report is parsed here, never on the proxy's thread.
 */
import type { SqlDialect } from '../../storage/dialect';
import type { Exec } from '../../storage/query/run';
import { ReconciliationRuns, type ReconciliationRunRow } from '../../storage/reconciliation-runs';
import type { ReconciliationReport } from '../../reconcile/report';
import { encodePageCursor } from '../page-cursor';

export interface ReconciliationPageQuery {
  provider: string | null;
  /** Runs on the page, and the id the page starts below (the cursor), null for the first page. */
  limit: number;
  before: number | null;
  /** The run whose report to show; null: the newest that succeeded (of `provider`). */
  run: number | null;
  linesLimit: number;
  linesOffset: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function runJson(r: ReconciliationRunRow) {
  return {
    id: r.id,
    provider: r.provider,
    from: iso(r.rangeFrom),
    to: iso(r.rangeTo),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
    source: r.source,
    status: r.status,
    error: r.error,
    drift: r.drift,
    pages: r.pages,
  };
}

function reportJson(run: ReconciliationRunRow, q: ReconciliationPageQuery) {
  if (run.report === null) return null;
  const { lines, ...head } = JSON.parse(run.report) as ReconciliationReport;
  const end = q.linesOffset + q.linesLimit;
  return {
    run_id: run.id,
    ...head,
    lines: lines.slice(q.linesOffset, end),
    lines_total: lines.length,
    next_lines_offset: end < lines.length ? end : null,
  };
}

export async function reconciliationPage(d: SqlDialect, exec: Exec, q: ReconciliationPageQuery): Promise<Buffer> {
  const runs = new ReconciliationRuns(d, exec);
  const provider = q.provider ?? undefined;
  const [rows, shown] = await Promise.all([
    runs.list(q.limit + 1, q.before, provider),
    q.run === null ? runs.latestReport(provider) : runs.get(q.run),
  ]);
  const page = rows.slice(0, q.limit);
  const body = {
    runs: page.map(runJson),
    next_cursor: rows.length > q.limit ? encodePageCursor(page[page.length - 1].id) : null,
    report: shown ? reportJson(shown, q) : null,
  };
  return Buffer.from(JSON.stringify(body));
}
