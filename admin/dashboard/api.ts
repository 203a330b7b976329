/**
 * Admin API routes added for the dashboard (all behind the admin token, like every /api route):
 *   GET /api/dimensions  built-in dimensions and every tag key in the data (the group-by picker)
 *   GET /api/info        proxy URL, workspaces, the build stamp, whether anything was recorded yet (the empty state), how many
 *                        records the store refused for their content and holds in quarantine (storage/quarantine.ts)
 *   GET /api/usage.csv   a page of the grouping of GET /api/usage (same parameters) as CSV; limit=all: every group,
 *                        streamed a chunk of lines at a time
 *   GET /api/usage.focus.csv  the range's charges in the FOCUS 1.2 columns (admin/dashboard/focus.ts), streamed a
 *                        few days at a time
 *   GET /api/usage/series  cost and requests per UTC hour/day for a few groups (the chart's stacks) plus
 *                          "other" (everything else) and the total, without sending every group's series
 *                          (admin/dashboard/series.ts)
 *   GET /api/latency     latency and time-to-first-byte percentiles per provider and model over time, and the error
 *                        rate by status and error code (admin/dashboard/latency.ts)
 * Their reads run on the admin API's reader thread (admin/reads/).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Router from '@koa/router';
import type { ParsedUrlQuery } from 'node:querystring';
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { WorkspaceEntry } from '../../config/schema';
import { GatewayError } from '../../core/errors';
import { BUILTIN_DIMENSIONS } from '../../storage/store';
import { DAY_MS } from '../../storage/rollup';
import { checkBuckets, filterFrom, groupByFrom, intervalFrom, usageParamsFrom } from '../query-params';
import { focusChunks, focusHeader, type FocusContext } from './focus';
import type { AdminReads } from '../reads/admin-reads';
import type { ReadStream } from '../../storage/reader-thread';

export interface DashboardApiDeps {
  reads: AdminReads;
  workspaces: readonly WorkspaceEntry[];
  /** http://host:port of the proxy listener, for the "send your first request" instructions. */
  proxyUrl?: string;
}

/** What `npm run build` stamped (tools/build-info.mjs): dist/build-info.json, two folders above this module. */
export interface BuildInfo {
  version: string;
  /** The commit built; null when the tree was no git checkout (a container build). */
  commit: string | null;
  built_at: string;
}

let buildInfo: BuildInfo | null | undefined;

/** The build stamp, read once; null when the code was compiled without it (tsc alone). */
function readBuildInfo(): BuildInfo | null {
  if (buildInfo !== undefined) return buildInfo;
  try {
    const { version, commit, built_at } = JSON.parse(
      readFileSync(join(__dirname, '..', '..', 'build-info.json'), 'utf8'),
    ) as BuildInfo;
    buildInfo = { version, commit, built_at };
  } catch {
    buildInfo = null;
  }
  return buildInfo;
}

/** Values one GET /api/usage/series may ask for. */
export const SERIES_VALUES_MAX = 20;

/** Tag keys one FOCUS export may split its rows by. */
export const FOCUS_TAGS_MAX = 3;

function focusTagsFrom(q: ParsedUrlQuery): string[] {
  const raw = q.tag;
  const tags = [...new Set(Array.isArray(raw) ? raw : raw ? [raw] : [])];
  if (tags.length > FOCUS_TAGS_MAX)
    throw new GatewayError('invalid_body', `at most ${FOCUS_TAGS_MAX} tag keys`, { param: 'tag' });
  for (const t of tags)
    if (t === '' || (BUILTIN_DIMENSIONS as readonly string[]).includes(t))
      throw new GatewayError('invalid_body', `tag must name a tag key, not "${t}"`, { param: 'tag' });
  return tags;
}

/**
 * The body of a streamed read: its chunks one at a time, the next asked only once the response has taken the last (so
 * that the process holds about one chunk, whatever the export's size). A failure after the first byte cannot become an
 * error answer: the connection is cut, and the client sees a body without its end, never a file that looks whole.
 */
function streamedBody(res: ServerResponse, first: Buffer | null, chunks: ReadStream): Readable {
  let head = first;
  return new Readable({
    highWaterMark: 1,
    read() {
      if (head !== null) {
        this.push(head);
        head = null;
        return;
      }
      chunks.next().then(
        (chunk) => this.push(chunk),
        (err: Error) => {
          res.destroy();
          this.destroy(err);
        },
      );
    },
    destroy(err, done) {
      chunks.cancel();
      done(err);
    },
  });
}

export function registerDashboardRoutes(router: Router, { reads, workspaces, proxyUrl }: DashboardApiDeps): void {
  const workspaceNames = Object.fromEntries(workspaces.map((w) => [w.id, w.name ?? w.id]));
  router.get('/dimensions', async (ctx) => {
    ctx.body = { builtin: [...BUILTIN_DIMENSIONS], tags: await reads.tagKeys() };
  });

  router.get('/info', async (ctx) => {
    const { latestTs, quarantined, keptFrom } = await reads.info();
    ctx.body = {
      proxy_url: proxyUrl ?? null,
      workspaces: workspaces.map((w) => ({ id: w.id, name: w.name ?? null })),
      has_records: latestTs !== null,
      latest_record_at: latestTs === null ? null : new Date(latestTs).toISOString(),
      quarantined_records: quarantined,
      records_kept_from: keptFrom === null ? null : new Date(keptFrom).toISOString(),
      build: readBuildInfo(),
    };
  });

  router.get('/usage.csv', async (ctx) => {
    const params = usageParamsFrom(ctx.query, { allowAll: true });
    const name = [
      'usage',
      ...(params.groupBy.length ? params.groupBy : ['total']),
      ...(params.interval ? [params.interval] : []),
      // The range in the name, so that two exports never read alike: UTC days, the last one the day holding `to`.
      new Date(params.filter.from).toISOString().slice(0, 10),
      'to',
      new Date(params.filter.to - 1).toISOString().slice(0, 10),
    ]
      .join('-')
      .replace(/[^A-Za-z0-9_.-]/g, '_');
    const chunks = reads.usageCsv(params);
    // A client gone, before the first chunk or after: the read stops on the reader thread.
    ctx.res.once('close', () => chunks.cancel());
    // A failure before the first chunk (store down, time limit) answers the JSON error as every read does.
    const first = await chunks.next();
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('content-disposition', `attachment; filename="${name}.csv"`);
    ctx.body = streamedBody(ctx.res, first, chunks);
  });

  /**
   * from/to/filter[...] as /api/usage, and tag=<key> (repeatable, at most FOCUS_TAGS_MAX) for x_tag_<key> columns.
   * The body is written a chunk of days at a time as the reader thread answers, never held whole.
   */
  router.get('/usage.focus.csv', (ctx) => {
    const filter = filterFrom(ctx.query);
    const focus: FocusContext = { from: filter.from, to: filter.to, tags: focusTagsFrom(ctx.query), workspaceNames };
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    async function* chunks() {
      yield Buffer.from(focusHeader(focus.tags));
      for (const [from, to] of focusChunks(filter.from, filter.to))
        yield await reads.focusCsv({ filter: { ...filter, from, to }, focus });
    }
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('content-disposition', `attachment; filename="focus-${day(filter.from)}-to-${day(filter.to - 1)}.csv"`);
    ctx.body = Readable.from(chunks());
  });

  /** from/to/filter[...] as /api/usage; interval=hour|day (default: hours up to three days, days beyond). */
  router.get('/latency', async (ctx) => {
    const filter = filterFrom(ctx.query);
    const interval = intervalFrom(ctx.query) ?? (filter.to - filter.from <= 3 * DAY_MS ? 'hour' : 'day');
    checkBuckets(filter, interval);
    ctx.type = 'application/json';
    ctx.body = await reads.latency({ filter, interval });
  });

  /**
   * ?group_by=<one dimension>&value=<v>&value=<w>...&interval=hour|day (default day), with from/to/filter[...]
   * as /api/usage. One series per value asked (at most 20; a built-in's absent value is "(none)"), "other"
   * (total minus those series) and the total. Without values: the top 8 groups by cost.
   */
  router.get('/usage/series', async (ctx) => {
    const filter = filterFrom(ctx.query);
    const groupBy = groupByFrom(ctx.query);
    if (groupBy.length > 1)
      throw new GatewayError('invalid_body', 'group_by takes one dimension here', { param: 'group_by' });
    const interval = intervalFrom(ctx.query) ?? 'day';
    const raw = ctx.query.value;
    const values = (Array.isArray(raw) ? raw : raw !== undefined ? [raw] : []).slice(0, SERIES_VALUES_MAX + 1);
    if (values.length > SERIES_VALUES_MAX)
      throw new GatewayError('invalid_body', `at most ${SERIES_VALUES_MAX} values`, { param: 'value' });
    checkBuckets(filter, interval);
    ctx.type = 'application/json';
    ctx.body = await reads.series({ filter, dim: groupBy[0], interval, values });
  });
}
