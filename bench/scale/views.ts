/**
 * Every admin read timed over HTTP against a generated store (bench/scale.ts --measure): p50 and p95 of RUNS
 * calls each, the admin API served as in bench/dashboard.ts. Deep paging follows next_cursor PAGES pages first,
 * then times the next page alone.
 */
import { request } from 'undici';
import type { UsageStore } from '../../storage/store';
import { get, serve } from '../dashboard';
import { CUSTOMER_NAMES } from './mix';

const DAY = 86_400_000;
const TOKEN = 'bench-admin-token-for-the-dashboard-bench';

export interface ViewTiming {
  view: string;
  p50_ms: number;
  p95_ms: number;
  rows?: number;
}

const f = (k: string, v: string) => `&filter[${k}]=${encodeURIComponent(v)}`;
const values = (vs: string[]) => vs.map((v) => `&value=${encodeURIComponent(v)}`).join('');

/** [name, path] of every read, for records ending at `end`. */
function reads(end: number, deepCursor: string): [string, string][] {
  const month = `from=${end - 30 * DAY}&to=${end}`;
  const year = `from=${end - 365 * DAY}&to=${end}`;
  const [top, tail] = [CUSTOMER_NAMES[0], CUSTOMER_NAMES[CUSTOMER_NAMES.length - 1]];
  const topCustomers = values(CUSTOMER_NAMES.slice(0, 8));
  return [
    ['totals, month', `/api/usage?${month}`],
    ['totals, year', `/api/usage?${year}`],
    ['by model, year', `/api/usage?group_by=model&${year}`],
    ['by key_id, month', `/api/usage?group_by=key_id&${month}`],
    ['by agent (tag), year', `/api/usage?group_by=agent&${year}`],
    ['by customer_id top 10 + other, month', `/api/usage?group_by=customer_id&limit=10&${month}`],
    ['by customer_id top 10 + other, year', `/api/usage?group_by=customer_id&limit=10&${year}`],
    ['by agent, feature (two tags), year', `/api/usage?group_by=agent,feature&${year}`],
    ['by model, provider, month', `/api/usage?group_by=model,provider&${month}`],
    ['series hourly by agent, month', `/api/usage/series?group_by=agent&interval=hour&${month}`],
    ['series daily by model, year', `/api/usage/series?group_by=model&interval=day&${year}`],
    [
      'series daily by customer_id top 8 + other, year',
      `/api/usage/series?group_by=customer_id&interval=day&${year}${topCustomers}`,
    ],
    ['by feature where customer_id=top, year', `/api/usage?group_by=feature&${year}${f('customer_id', top)}`],
    ['by feature where customer_id=tail, month', `/api/usage?group_by=feature&${month}${f('customer_id', tail)}`],
    ['by customer_id where model=o3, month', `/api/usage?group_by=customer_id&limit=10&${month}${f('model', 'o3')}`],
    [
      'by model where env=staging + agent, year',
      `/api/usage?group_by=model&${year}${f('env', 'staging')}${f('agent', 'research-agent')}`,
    ],
    ['requests page 1, year', `/api/requests?limit=50&${year}`],
    ['requests page 201 (keyset), year', `/api/requests?limit=50&${year}&cursor=${deepCursor}`],
    ['requests where customer_id=tail, year', `/api/requests?limit=50&${year}${f('customer_id', tail)}`],
    [
      'requests where model=o3 + status=500, year',
      `/api/requests?limit=50&${year}${f('model', 'o3')}${f('status', '500')}`,
    ],
    ['budgets', '/api/budgets'],
    ['dimensions', '/api/dimensions'],
    ['CSV export by customer_id (all), year', `/api/usage.csv?group_by=customer_id&limit=all&${year}`],
  ];
}

async function cursorAfter(url: string, path: string, pages: number): Promise<string> {
  let cursor = '';
  for (let i = 0; i < pages; i++) {
    const res = await request(`${url}${path}${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    cursor = ((await res.body.json()) as { next_cursor: string }).next_cursor;
  }
  return cursor;
}

const rank = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];

/** Each read `runs` times (after one untimed call); `log` gets a line per read. */
export async function timeViews(
  store: UsageStore,
  end: number,
  runs: number,
  log: (line: string) => void,
): Promise<ViewTiming[]> {
  const { url, server, reads: admin } = await serve(store);
  try {
    const deep = await cursorAfter(url, `/api/requests?limit=50&from=${end - 365 * DAY}&to=${end}`, 200);
    const out: ViewTiming[] = [];
    for (const [view, path] of reads(end, deep)) {
      await get(url, path);
      const ms: number[] = [];
      let rows: number | undefined;
      for (let i = 0; i < runs; i++) ({ rows } = await get(url, path).then((r) => (ms.push(r.ms), r)));
      out.push({ view, p50_ms: rank(ms, 0.5), p95_ms: rank(ms, 0.95), rows });
      log(`  ${view}: p50 ${rank(ms, 0.5).toFixed(0)} ms, p95 ${rank(ms, 0.95).toFixed(0)} ms`);
    }
    return out;
  } finally {
    server.close();
    await admin.close();
  }
}
