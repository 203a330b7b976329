/**
 * The reads of the admin API and dashboard, as they run on the reader thread (admin/reads/reader-worker.ts), or
 * inline for an in-memory store. A large answer (a grouping, a page of records, a series, a CSV) is built here to
 * the bytes of its body: the proxy's thread then only writes them out, never decodes rows nor serialises JSON.
 */
import type { TagSpendQuery } from '../../contracts/services';
import { tagSpendPage } from '../../services/tag-spend-page';
import { toNumber } from '../../storage/codec';
import { groupPage } from '../../storage/query/group-page';
import { keyPage, type KeyPageQuery } from '../../storage/query/key-page';
import { listTagKeys } from '../../storage/query/dimensions';
import { listPage } from '../../storage/query/list';
import { rankedUsageSql } from '../../storage/query/ranked';
import { tempTablePages } from '../../storage/query/ranked-pages';
import { rankedRow, runUsageQuery } from '../../storage/query/run';
import type { ReadConnection } from '../../storage/read-connection';
import type { Interval, ListRequestsQuery, UsageFilter, UsageGroupRow, UsageQuery } from '../../storage/store';
import { CSV_CHUNK_LINES, UsageCsv, usageCsvChunks } from '../dashboard/csv';
import { FOCUS_GROUP_BY, focusLines, type FocusContext } from '../dashboard/focus';
import { seriesAnswer, type SeriesParams } from '../dashboard/series';
import { latencyAnswer, type LatencyParams } from '../dashboard/latency';
import { readRecordsKeptFrom } from '../../storage/retention';
import { ReconciliationRuns } from '../../storage/reconciliation-runs';
import { reconciliationPage, type ReconciliationPageQuery } from './reconciliation-page';
import { recordedGeneration, type GenerationPage } from '../../reconcile/recorded-generation';
import { groupRowJson, recordJson, retentionJson, totalsJson } from '../serialize';

/** GET /api/usage and /api/usage.csv, parsed (admin/query-params.ts). */
export interface UsageParams {
  filter: UsageFilter;
  groupBy: string[];
  interval?: Interval;
  /** Groups on the page, and the first of them in the ranking by cost. */
  limit: number;
  offset: number;
  /** Only groups with a value holding this (case-insensitive) are paged; '' pages them all. */
  search: string;
}

const jsonBytes = (body: unknown): Buffer => Buffer.from(JSON.stringify(body));

/** The reads of reconciliation: its stored runs, and the records an OpenRouter run looks up. */
function reconciliationReads(d: ReadConnection['dialect'], exec: ReadConnection['exec']) {
  return {
    /** The JSON body of GET /api/reconciliation. */
    reconciliation: (q: ReconciliationPageQuery) => reconciliationPage(d, exec, q),
    /** Each provider's newest successful reconciliation (the drift gauge). */
    reconciliationDrifts: () => new ReconciliationRuns(d, exec).latestPerProvider(),
    /** A page of records with what an OpenRouter reconciliation sets beside each generation (reconcile/run.ts). */
    async generationPage(q: ListRequestsQuery): Promise<GenerationPage> {
      const page = await listPage(d, exec, q);
      return { records: page.records.map(recordedGeneration), nextCursor: page.nextCursor };
    },
  };
}

type QueryUsage = (q: UsageQuery) => Promise<UsageGroupRow[]>;

/** The grouping's rows (most expensive first) and its total. */
async function grouping(queryUsage: QueryUsage, p: UsageParams) {
  const [rows, [total]] = await Promise.all([
    queryUsage({ ...p.filter, groupBy: p.groupBy, interval: p.interval }),
    queryUsage({ ...p.filter, groupBy: [] }),
  ]);
  return { rows, total };
}

/**
 * GET /api/usage.csv, a chunk of lines at a time (a streamed read: storage/reader-thread.ts). Every group (limit=all,
 * no search) is merged and ranked by the database and read a page of CSV_CHUNK_LINES rows at a time
 * (storage/query/ranked.ts): the export holds a page, never the grouping. A page of groups, or every group matching a
 * search, is cut from the grouping's rows (groupPage).
 */
async function* usageCsv(conn: Reads, queryUsage: QueryUsage, p: UsageParams): AsyncGenerator<Buffer> {
  const withBucket = p.interval !== undefined;
  if (p.limit !== Infinity || p.search !== '') {
    const { rows, total } = await grouping(queryUsage, p);
    const page = groupPage(rows, p.groupBy, p.limit, p.offset, p.search);
    for (const text of usageCsvChunks(p.groupBy, page.rows, total, withBucket, page.other ?? undefined, p.filter))
      yield Buffer.from(text);
    return;
  }
  const [[total], { plan, sql }] = await Promise.all([
    queryUsage({ ...p.filter, groupBy: [] }),
    rankedUsageSql(conn.dialect, conn.exec, { ...p.filter, groupBy: p.groupBy, interval: p.interval }),
  ]);
  const csv = new UsageCsv(p.groupBy, total, withBucket, p.filter);
  const pages = conn.pages ?? tempTablePages(conn.exec);
  for await (const rows of pages(sql, CSV_CHUNK_LINES)) {
    for (const row of rows) {
      const chunk = csv.add(rankedRow(conn.dialect, plan, row));
      if (chunk !== undefined) yield Buffer.from(chunk);
    }
  }
  const last = csv.end(undefined);
  if (last !== undefined) yield Buffer.from(last);
}

/** A read connection; `pages` is optional for an in-memory SQLite store's own (tempTablePages over its exec). */
type Reads = Pick<ReadConnection, 'dialect' | 'exec'> & Partial<Pick<ReadConnection, 'pages'>>;

export function readOps(conn: Reads) {
  const { dialect: d, exec } = conn;
  const queryUsage = (q: UsageQuery) => runUsageQuery(d, exec, q);
  /** Retention's cut-off (UsageStore.recordsKeptFrom), read on this connection. */
  const keptFrom = { recordsKeptFrom: () => readRecordsKeptFrom(d, exec) };

  /** The grouping's page of groups (by cost), "other" for the rest, and the total. */
  async function usagePage(p: UsageParams) {
    const { rows, total } = await grouping(queryUsage, p);
    return { page: groupPage(rows, p.groupBy, p.limit, p.offset, p.search), total };
  }

  return {
    async usage(p: UsageParams): Promise<Buffer> {
      const [{ page, total }, retention] = await Promise.all([
        usagePage(p),
        retentionJson(keptFrom, [
          { ...p.filter, groupBy: p.groupBy, interval: p.interval },
          { ...p.filter, groupBy: [] },
        ]),
      ]);
      return jsonBytes({
        from: new Date(p.filter.from).toISOString(),
        to: new Date(p.filter.to).toISOString(),
        group_by: p.groupBy,
        interval: p.interval ?? null,
        filters: p.filter.filters,
        rows: page.rows.map(groupRowJson),
        other: page.other && { groups: page.other.groups, ...totalsJson(page.other) },
        total: total ? totalsJson(total) : null,
        groups: page.groups,
        limit: p.limit,
        offset: p.offset,
        search: p.search,
        next_offset: page.nextOffset,
        ...retention,
      });
    },

    usageCsv: (p: UsageParams) => usageCsv(conn, queryUsage, p),

    /** One chunk of the FOCUS export (admin/dashboard/focus.ts): its charge rows, one per day and group. */
    async focusCsv({ filter, focus }: { filter: UsageFilter; focus: FocusContext }): Promise<Buffer> {
      const rows = await queryUsage({ ...filter, groupBy: [...FOCUS_GROUP_BY, ...focus.tags], interval: 'day' });
      return Buffer.from(focusLines(rows, focus));
    },

    async series(p: SeriesParams): Promise<Buffer> {
      const groupBy = p.dim ? [p.dim] : [];
      const [answer, retention] = await Promise.all([
        seriesAnswer(queryUsage, p),
        // A series read one value at a time takes the same path as the grouping.
        retentionJson(keptFrom, [
          { ...p.filter, groupBy: [], interval: p.interval },
          { ...p.filter, groupBy, interval: p.interval },
        ]),
      ]);
      return jsonBytes({ ...answer, ...retention });
    },

    /** GET /api/latency: errors from the rollups, percentiles from the range's newest records (bounded). */
    async latency(p: LatencyParams): Promise<Buffer> {
      const listPageHere = (q: ListRequestsQuery) => listPage(d, exec, q);
      return jsonBytes(await latencyAnswer({ queryUsage, listPage: listPageHere }, p));
    },

    async requests(q: ListRequestsQuery): Promise<Buffer> {
      const page = await listPage(d, exec, q);
      return jsonBytes({ data: page.records.map(recordJson), next_cursor: page.nextCursor });
    },

    /** The newest record's time (over all time: one index seek on (ts, id)), the quarantined records, retention's cut-off. */
    async info(): Promise<{ latestTs: number | null; quarantined: number; keptFrom: number | null }> {
      const [latest, [quarantined], kept] = await Promise.all([
        listPage(d, exec, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 1 }),
        exec({ sql: 'SELECT count(*) AS n FROM quarantined_records', params: [] }),
        keptFrom.recordsKeptFrom(),
      ]);
      return { latestTs: latest.records[0]?.ts ?? null, quarantined: toNumber(quarantined?.n), keptFrom: kept };
    },

    ...reconciliationReads(d, exec),
    tagKeys: () => listTagKeys(d, exec),
    keys: (q: KeyPageQuery) => keyPage(d, exec, q),
    /** Grouped totals as rows (the budgets' spend: a total, or one row per tag value). */
    usageRows: queryUsage,
    tagSpend: (q: TagSpendQuery) => tagSpendPage(queryUsage, q),
  };
}

export type ReadOps = ReturnType<typeof readOps>;
