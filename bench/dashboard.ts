/**
 * Dashboard benchmark: every view's admin API calls, timed over HTTP against a store of a million records.
 *
 *   npm run bench:dashboard                       SQLite (temp dir, removed at the end)
 *   DATABASE_URL=postgres://... npm run bench:dashboard   SQLite, then PostgreSQL (a unique schema, dropped at the end)
 *   BENCH_RECORDS=200000 npm run bench:dashboard  another size
 *   BENCH_BATCH=500                               insertBatch size while filling (default 5000; the gateway writes 500)
 *   BENCH_BUDGET_MS=500                           the budget (default 500 ms, see below)
 *   BENCH_STORES=postgres                         only these stores (sqlite,postgres by default)
 *   BENCH_KEEP_SCHEMA=1                           leave the PostgreSQL schema in place (its name is printed) to study plans
 *
 * Budget: every view's median wall time (as the page loads it) must stay under BENCH_BUDGET_MS on every store
 * measured; the run exits with status 1 otherwise, after writing its results. 500 ms: well under a second with a
 * million records, with room for a slower machine.
 * Results: bench/results/dashboard-latest.{md,json} (git-ignored; the previous run's are kept as dashboard-previous.*),
 * the summary table (one row per view, both stores) first, then every call. docs/performance.md ("Dashboard at a
 * million records") shows a copy of the summary of a run at 1,000,000 records.
 *
 * The store is generated directly through UsageStore.insertBatch (so rollups and tag tables are maintained
 * exactly as in production) with realistic cardinalities: 2000 customers (Zipf), 12 agents (each with its
 * workspace, one or two keys, a few of the 16 models over 5 providers and a few of 30 features), team and env
 * tags on part of the records, a few statuses and provenances, over 35 days in time order with a daily rhythm.
 * The admin API is then served on a loopback port, and each view is timed as the page runs it (its first calls
 * in parallel, then the chart's: the wall time of the view) and each call alone (median and max of several runs).
 * Not part of npm test.
 */
import 'reflect-metadata';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pool } from 'pg';
import { request } from 'undici';
import { createAdminApp } from '../admin/app';
import { AdminReads } from '../admin/reads/admin-reads';
import { createLogger } from '../runtime/logger';
import type { UsageRecord } from '../records/usage-record';
import { BudgetLedger } from '../services/budget-ledger';
import { openStore } from '../storage';
import type { UsageStore } from '../storage/store';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 1_000_000);
const DAYS = 35;
/** Records per generated chunk; insertBatch gets BATCH at a time. */
const GENERATED_BATCH = 5000;
const BATCH = Number(process.env.BENCH_BATCH ?? 5000);
const BUDGET_MS = Number(process.env.BENCH_BUDGET_MS ?? 500);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const STORES = new Set((process.env.BENCH_STORES ?? 'sqlite,postgres').split(','));
const TOKEN = 'bench-admin-token-for-the-dashboard-bench';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Zipf-distributed index in [0, n): rank k with weight 1/(k+1)^s. */
function zipf(n: number, s: number): (r: number) => number {
  const cdf: number[] = [];
  let sum = 0;
  for (let k = 0; k < n; k++) cdf.push((sum += 1 / (k + 1) ** s));
  return (r) => {
    const x = r * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const MODELS: [provider: string, model: string, inPico: bigint, outPico: bigint][] = [
  ['openai', 'gpt-4o-mini', 150_000n, 600_000n],
  ['openai', 'gpt-4o', 2_500_000n, 10_000_000n],
  ['openai', 'gpt-4.1', 2_000_000n, 8_000_000n],
  ['openai', 'gpt-4.1-mini', 400_000n, 1_600_000n],
  ['openai', 'o3', 2_000_000n, 8_000_000n],
  ['openai', 'text-embedding-3-small', 20_000n, 0n],
  ['anthropic', 'claude-sonnet-4-5', 3_000_000n, 15_000_000n],
  ['anthropic', 'claude-haiku-4-5', 1_000_000n, 5_000_000n],
  ['anthropic', 'claude-opus-4-5', 5_000_000n, 25_000_000n],
  ['gemini', 'gemini-2.5-flash', 300_000n, 2_500_000n],
  ['gemini', 'gemini-2.5-pro', 1_250_000n, 10_000_000n],
  ['mistral', 'mistral-small-latest', 100_000n, 300_000n],
  ['mistral', 'mistral-large-latest', 2_000_000n, 6_000_000n],
  ['mistral', 'codestral-2508', 300_000n, 900_000n],
  ['openrouter', 'meta-llama/llama-4-maverick', 200_000n, 600_000n],
  ['mistral', 'mistral-nightly-preview', 0n, 0n], // no price: unpriced
];

interface AgentProfile {
  agent: string;
  workspace: string;
  keys: string[];
  /** Indexes into MODELS with weights. */
  models: [number, number][];
  features: string[];
  weight: number;
}

/** Agents as programs: each has its workspace, one or two keys, a few models and features (as in production). */
function agentProfiles(r: () => number): AgentProfile[] {
  return Array.from({ length: 12 }, (_, a) => {
    const models: [number, number][] = Array.from({ length: 2 + Math.floor(r() * 2) }, (_, j) => [
      Math.floor(r() * MODELS.length),
      j === 0 ? 6 : 1 + Math.floor(r() * 3),
    ]);
    if (a === 5) models.push([MODELS.length - 1, 1]); // one agent tries an unpriced model
    return {
      agent: `agent-${String(a).padStart(2, '0')}`,
      workspace: ['default', 'research', 'sandbox'][a % 3],
      keys: Array.from({ length: 1 + (a % 2) }, (_, k) => `key-${String(a * 3 + k).padStart(2, '0')}`),
      models,
      features: Array.from(
        { length: 3 + Math.floor(r() * 3) },
        () => `feature-${String(Math.floor(r() * r() * 30)).padStart(2, '0')}`,
      ),
      weight: 1 / (a + 1) ** 0.8,
    };
  });
}

function weighted<T>(r: number, items: [T, number][]): T {
  const total = items.reduce((s, [, w]) => s + w, 0);
  let x = r * total;
  for (const [v, w] of items) if ((x -= w) < 0) return v;
  return items[items.length - 1][0];
}

/** Relative traffic of each hour from `start` to `now`: busier in working hours, half on weekends. */
function hourWeights(start: number, now: number): number[] {
  const hours: number[] = [];
  for (let t = start; t < now; t += HOUR) {
    const h = new Date(t).getUTCHours();
    const weekend = [0, 6].includes(new Date(t).getUTCDay());
    hours.push((0.2 + Math.exp(-((h - 14) ** 2) / 18)) * (weekend ? 0.5 : 1));
  }
  return hours;
}

/** Records in time order (as they arrive), `count` over DAYS days before `now`, busier in working hours. */
export function* generate(count: number, now: number, customers = 2000): Generator<UsageRecord[]> {
  const r = rng(7);
  const customer = zipf(customers, 1.05);
  const agentWeights = agentProfiles(r).map((a): [AgentProfile, number] => [a, a.weight]);
  const start = now - DAYS * DAY;
  // Hour weights, then a record's time = its hour + a uniform offset, emitted in order.
  const hours = hourWeights(start, now);
  const totalWeight = hours.reduce((a, b) => a + b, 0);
  let batch: UsageRecord[] = [];
  let i = 0;
  for (let hIdx = 0; hIdx < hours.length && i < count; hIdx++) {
    const n =
      hIdx === hours.length - 1 ? count - i : Math.min(count - i, Math.round((hours[hIdx] / totalWeight) * count));
    const offsets = Array.from({ length: n }, () => Math.floor(r() * HOUR)).sort((a, b) => a - b);
    for (const off of offsets) {
      const ts = Math.min(now - 1, start + hIdx * HOUR + off);
      const p = weighted(r(), agentWeights);
      batch.push(benchRecord(r, i++, ts, p, customer));
      if (batch.length === GENERATED_BATCH) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length) yield batch;
}

/** One record of agent `p` at `ts`: its model, tags, status, tokens and cost drawn from `r`. */
function benchRecord(
  r: () => number,
  i: number,
  ts: number,
  p: AgentProfile,
  customer: (u: number) => number,
): UsageRecord {
  const mIdx = weighted(r(), p.models);
  const [provider, m, inRate, outRate] = MODELS[mIdx];
  const tags: Record<string, string> = {
    agent: p.agent,
    feature: p.features[Math.floor(r() * p.features.length)],
    customer_id: `cust-${String(customer(r())).padStart(4, '0')}`,
  };
  if (r() < 0.8) tags.team = ['support', 'platform', 'growth', 'research', 'sales'][Number(p.agent.slice(-2)) % 5];
  if (r() < 0.5) tags.env = r() < 0.85 ? 'prod' : 'staging';
  const roll = r();
  const status = roll < 0.97 ? 200 : roll < 0.985 ? 429 : roll < 0.995 ? 500 : 400;
  const input = Math.round(Math.exp(5 + r() * 4));
  const output = m.startsWith('text-embedding') ? 0 : Math.round(Math.exp(3 + r() * 4));
  const cacheRead = r() < 0.3 ? Math.round(input * r()) : 0;
  const unpriced = inRate === 0n;
  const failed = status !== 200;
  const estimated = !unpriced && !failed && r() < 0.03;
  return {
    id: `bench-${i.toString(36).padStart(7, '0')}`,
    ts,
    workspaceId: p.workspace,
    keyId: p.keys[Math.floor(r() * p.keys.length)],
    provider,
    model: m,
    servedModel: m,
    endpoint: m.startsWith('text-embedding')
      ? 'embeddings'
      : provider === 'anthropic'
        ? 'messages'
        : 'chat.completions',
    status,
    streamed: r() < 0.4,
    inputTokens: failed ? 0 : input,
    outputTokens: failed ? 0 : output,
    cacheReadTokens: failed ? 0 : cacheRead,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    reasoningTokens: m === 'o3' ? Math.round(output / 2) : 0,
    citationTokens: 0,
    searchQueries: 0,
    costPico: unpriced
      ? null
      : failed
        ? 0n
        : BigInt(input) * inRate + BigInt(output) * outRate + BigInt(cacheRead) * (inRate / 10n),
    provenance: unpriced ? 'unpriced' : failed ? 'failed' : estimated ? 'estimated' : 'measured',
    priceVersion: unpriced ? null : 'bench',
    latencyMs: 200 + Math.floor(r() * 8000),
    ttfbMs: 100 + Math.floor(r() * 800),
    tags,
    errorCode: failed ? 'upstream_error' : null,
  };
}

interface Timing {
  store: string;
  view: string;
  call: string;
  median_ms: number;
  max_ms: number;
  rows?: number;
}

export async function serve(store: UsageStore): Promise<{ url: string; server: Server; reads: AdminReads }> {
  const reads = AdminReads.open(store.readSource(), { timeoutMs: 60_000 });
  const app = createAdminApp({
    store,
    reads,
    token: TOKEN,
    logger: createLogger('silent'),
    workspaces: [{ id: 'default', keys: [], limits: {} } as never],
    budgets: new BudgetLedger(),
    onKeysChanged: async () => {},
    proxyUrl: 'http://127.0.0.1:8080',
  });
  const server = createServer(app.callback());
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, reads };
}

export async function get(base: string, path: string): Promise<{ ms: number; rows?: number }> {
  const t = performance.now();
  const res = await request(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await res.body.text();
  const ms = performance.now() - t;
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  let rows: number | undefined;
  if (text.startsWith('{')) {
    const j = JSON.parse(text);
    rows = j.rows?.length ?? j.data?.length ?? j.tags?.length ?? j.series?.length;
  } else rows = text.split('\r\n').length - 2;
  return { ms, rows };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** How the store took the records: time and CPU inside insertBatch only (not generating the records). */
interface FillStats {
  store: string;
  records: number;
  batch: number;
  insert_s: number;
  records_per_s: number;
  /** CPU of this process (every thread: the SQLite writer runs on one) during insertBatch, per record. */
  cpu_us_per_record: number;
}

async function fill(store: UsageStore, label: string, now: number): Promise<FillStats> {
  const t = performance.now();
  let inside = 0;
  let cpu = 0;
  let n = 0;
  for (const batch of generate(RECORDS, now)) {
    for (let i = 0; i < batch.length; i += BATCH) {
      const part = batch.slice(i, i + BATCH);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await store.insertBatch(part);
      inside += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpu += c.user + c.system;
    }
    n += batch.length;
    if (n % 100_000 === 0)
      process.stderr.write(
        `  ${label}: ${n.toLocaleString('en-US')} records (${((performance.now() - t) / 1000).toFixed(0)} s)\n`,
      );
  }
  const stats: FillStats = {
    store: label,
    records: n,
    batch: BATCH,
    insert_s: inside / 1000,
    records_per_s: Math.round(n / (inside / 1000)),
    cpu_us_per_record: cpu / n,
  };
  process.stderr.write(
    `  ${label}: ${n.toLocaleString('en-US')} records inserted in ${stats.insert_s.toFixed(1)} s of insertBatch (${stats.records_per_s.toLocaleString('en-US')}/s, ${stats.cpu_us_per_record.toFixed(0)} µs CPU per record, batches of ${BATCH})\n`,
  );
  return stats;
}

/** [name, path, stage]: stage 1 calls run in parallel, stage 2 after them (as the page does). */
type Call = [string, string, number?];

/** The calls each view makes, as the page makes them (usage.ts, requests.ts, keys.ts, main.ts). */
function views(now: number, topCustomer: string, firstCursor: string | null): { view: string; calls: Call[] }[] {
  const q = (from: number, to: number) => `from=${from}&to=${to}`;
  const usage = (label: string, span: number, interval: 'hour' | 'day', groupBy: string, filters = '') => {
    const from = now - span;
    return {
      view: `usage ${label} by ${groupBy}${filters ? ` where ${decodeURIComponent(filters).replace(/&filter\[(.+?)\]=/g, ' $1=')}` : ''}`,
      calls: [
        ['dimensions', '/api/dimensions'],
        ['table (grouped + total)', `/api/usage?group_by=${groupBy}&${q(from, now)}${filters}`],
        ['previous period', `/api/usage?${q(from - span, from)}${filters}`],
        // After the table (it names the top groups): the chart's stacks.
        [
          `chart (${interval}, top 8 + other)`,
          `/api/usage/series?group_by=${groupBy}&${q(from, now)}&interval=${interval}${filters}`,
          2,
        ],
      ] as Call[],
    };
  };
  const f = (k: string, v: string) => `&filter[${k}]=${encodeURIComponent(v)}`;
  return [
    {
      view: 'sign-in',
      calls: [
        ['info', '/api/info'],
        ['dimensions', '/api/dimensions'],
      ],
    },
    usage('1 h', HOUR, 'hour', 'agent'),
    usage('24 h', DAY, 'hour', 'agent'),
    usage('7 d', 7 * DAY, 'day', 'agent'),
    usage('30 d', 30 * DAY, 'day', 'agent'),
    usage('30 d', 30 * DAY, 'day', 'model'),
    usage('30 d', 30 * DAY, 'day', 'customer_id'),
    usage('30 d', 30 * DAY, 'day', 'feature', f('customer_id', topCustomer)),
    usage('30 d', 30 * DAY, 'day', 'feature', f('customer_id', 'cust-0010')),
    usage('30 d', 30 * DAY, 'day', 'agent', f('customer_id', topCustomer) + f('feature', 'feature-00')),
    usage('30 d', 30 * DAY, 'day', 'team'),
    usage('30 d', 30 * DAY, 'day', 'customer_id', f('agent', 'agent-00')),
    usage('30 d', 30 * DAY, 'day', 'model', f('provider', 'openai')),
    usage('7 d', 7 * DAY, 'day', 'feature', f('agent', 'agent-00')),
    usage('24 h', DAY, 'hour', 'feature', f('agent', 'agent-00')),
    usage('30 d', 30 * DAY, 'day', 'customer_id', f('agent', 'agent-02') + f('env', 'prod')),
    {
      view: 'CSV export 30 d by customer_id',
      calls: [['usage.csv', `/api/usage.csv?group_by=customer_id&${q(now - 30 * DAY, now)}`]],
    },
    {
      view: 'requests 30 d',
      calls: [
        ['page 1', `/api/requests?limit=50&${q(now - 30 * DAY, now)}`],
        [
          'page 2 (cursor)',
          `/api/requests?limit=50&${q(now - 30 * DAY, now)}${firstCursor ? `&cursor=${firstCursor}` : ''}`,
        ],
      ],
    },
    {
      view: 'requests 30 d where customer_id (top)',
      calls: [['page 1', `/api/requests?limit=50&${q(now - 30 * DAY, now)}${f('customer_id', topCustomer)}`]],
    },
    {
      view: 'requests 30 d where customer_id (tail)',
      calls: [['page 1', `/api/requests?limit=50&${q(now - 30 * DAY, now)}${f('customer_id', 'cust-1999')}`]],
    },
    {
      view: 'requests 30 d where agent + model',
      calls: [
        ['page 1', `/api/requests?limit=50&${q(now - 30 * DAY, now)}${f('agent', 'agent-03')}${f('model', 'gpt-4o')}`],
      ],
    },
    { view: 'API keys', calls: [['keys', '/api/keys']] },
  ];
}

async function measure(store: UsageStore, label: string, now: number): Promise<Timing[]> {
  const { url, server, reads } = await serve(store);
  const out: Timing[] = [];
  try {
    const first = await request(`${url}/api/requests?limit=50&from=${now - 30 * DAY}&to=${now}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const cursor = ((await first.body.json()) as { next_cursor: string | null }).next_cursor;
    for (const v of views(now, 'cust-0000', cursor)) {
      // The chart asks for the table's top 8 groups by cost (all of them when there are 9 or fewer).
      const table = v.calls.find(([name]) => name.startsWith('table'));
      if (table) {
        const res = await request(`${url}${table[1]}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const body = (await res.body.json()) as {
          group_by: string[];
          rows: { group: Record<string, string | null> }[];
        };
        const top = body.rows.slice(0, body.rows.length <= 9 ? 9 : 8).map((r) => r.group[body.group_by[0]] ?? '(none)');
        for (const c of v.calls) if (c[2] === 2) c[1] += top.map((t) => `&value=${encodeURIComponent(t)}`).join('');
      }
      const wall: number[] = [];
      const each = new Map<string, { ms: number[]; rows?: number }>();
      for (let i = 0; i < RUNS; i++) {
        // The view as the page loads it: its first calls in parallel, then the chart's.
        const t = performance.now();
        await Promise.all(v.calls.filter((c) => c[2] !== 2).map(([, p]) => get(url, p)));
        for (const [, p] of v.calls.filter((c) => c[2] === 2)) await get(url, p);
        wall.push(performance.now() - t);
        // Each call alone.
        for (const [name, p] of v.calls) {
          const { ms, rows } = await get(url, p);
          const e = each.get(name) ?? { ms: [] };
          e.ms.push(ms);
          e.rows = rows;
          each.set(name, e);
        }
      }
      out.push({
        store: label,
        view: v.view,
        call: '(whole view, as the page loads it)',
        median_ms: median(wall),
        max_ms: Math.max(...wall),
      });
      for (const [name, e] of each)
        out.push({
          store: label,
          view: v.view,
          call: name,
          median_ms: median(e.ms),
          max_ms: Math.max(...e.ms),
          rows: e.rows,
        });
      const w = out[out.length - each.size - 1];
      process.stderr.write(`  ${label} ${v.view}: ${w.median_ms.toFixed(0)} ms (max ${w.max_ms.toFixed(0)} ms)\n`);
    }
  } finally {
    server.close();
    await reads.close();
  }
  return out;
}

function markdown(all: Timing[]): string {
  const lines = ['| store | view | call | median ms | max ms | rows |', '|---|---|---|---:|---:|---:|'];
  for (const t of all)
    lines.push(
      `| ${t.store} | ${t.view} | ${t.call} | ${t.median_ms.toFixed(1)} | ${t.max_ms.toFixed(1)} | ${t.rows ?? ''} |`,
    );
  return lines.join('\n');
}

/** One row per view: its whole-view median (max) on each store, against the budget. */
function summaryTable(all: Timing[], stores: string[]): string {
  const whole = all.filter((t) => t.call.startsWith('(whole view'));
  const views = [...new Set(whole.map((t) => t.view))];
  const lines = [
    `| view | ${stores.map((s) => `${s} median (max) ms`).join(' | ')} |`,
    `|---|${stores.map(() => '---:').join('|')}|`,
  ];
  for (const v of views) {
    const cells = stores.map((s) => {
      const t = whole.find((w) => w.view === v && w.store === s);
      return t
        ? `${t.median_ms.toFixed(0)} (${t.max_ms.toFixed(0)})${t.median_ms >= BUDGET_MS ? ' **over budget**' : ''}`
        : '';
    });
    lines.push(`| ${v} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function fillTable(fills: FillStats[]): string {
  const lines = [
    '| store | records | batch | insertBatch time | records/s | CPU µs per record |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const f of fills) {
    lines.push(
      `| ${f.store} | ${f.records.toLocaleString('en-US')} | ${f.batch} | ${f.insert_s.toFixed(1)} s | ${f.records_per_s.toLocaleString('en-US')} | ${f.cpu_us_per_record.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/** Row counts of the tables (the rollups' sizes decide what the queries read). */
const TABLES = [
  'usage_records',
  'usage_rollup_hourly',
  'usage_tag_rollup_hourly',
  'usage_rollup_daily',
  'usage_tag_rollup_daily',
  'tag_sets',
  'tag_set_members',
  'usage_tag_set_daily',
];

async function sqliteSizes(path: string): Promise<Record<string, number>> {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, Number(db.prepare(`SELECT COUNT(*) FROM ${t}`).pluck().get())]));
  } finally {
    db.close();
  }
}

async function postgresSizes(pool: Pool, schema: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = Number((await pool.query(`SELECT COUNT(*) AS n FROM ${schema}.${t}`)).rows[0].n);
  return out;
}

function sizesTable(sizes: Record<string, Record<string, number>>): string {
  const stores = Object.keys(sizes);
  const lines = [
    `| table | ${stores.map((s) => `${s} rows`).join(' | ')} |`,
    `|---|${stores.map(() => '---:').join('|')}|`,
  ];
  for (const t of TABLES)
    lines.push(`| ${t} | ${stores.map((s) => sizes[s][t].toLocaleString('en-US')).join(' | ')} |`);
  return lines.join('\n');
}

/** What one store's run adds: its timings, how its fill went, and its table sizes. */
interface StoreRun {
  all: Timing[];
  fills: FillStats[];
  sizes: Record<string, Record<string, number>>;
}

async function benchSqlite(now: number, run: StoreRun): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-dashboard-'));
  try {
    process.stderr.write(`SQLite (${dir}):\n`);
    const sqlite = await openStore(`sqlite:${join(dir, 'bench.db')}`);
    try {
      run.fills.push(await fill(sqlite, 'sqlite', now));
      run.sizes.sqlite = await sqliteSizes(join(dir, 'bench.db'));
      run.all.push(...(await measure(sqlite, 'sqlite', now)));
    } finally {
      await sqlite.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchPostgres(now: number, pgUrl: string, run: StoreRun): Promise<void> {
  const schema = `bench_dashboard_${process.pid}_${Date.now().toString(36)}`;
  process.stderr.write(`PostgreSQL (schema ${schema}):\n`);
  const pg = await openStore(pgUrl, { schema });
  try {
    run.fills.push(await fill(pg, 'postgres', now));
    const admin = new Pool({ connectionString: pgUrl, max: 1 });
    // Planner statistics and visibility maps as autovacuum would have them after a fill this size (PostgreSQL 13+
    // also vacuums insert-only tables), so index-only scans are possible as they would be in production.
    for (const t of TABLES) await admin.query(`VACUUM (ANALYZE) ${schema}.${t}`);
    run.sizes.postgres = await postgresSizes(admin, schema);
    await admin.end();
    run.all.push(...(await measure(pg, 'postgres', now)));
  } finally {
    await pg.close();
    if (process.env.BENCH_KEEP_SCHEMA) process.stderr.write(`PostgreSQL schema ${schema} kept (BENCH_KEEP_SCHEMA)\n`);
    else {
      const admin = new Pool({ connectionString: pgUrl, max: 1 });
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  }
}

/** The report: summary lines first (the budget's verdict), then the tables; written to bench/results. */
function report({ all, fills, sizes }: StoreRun, summary: string[]): { md: string; over: Timing[] } {
  const stores = Object.keys(sizes);
  const views = all.filter((t) => t.call.startsWith('(whole view'));
  const worst = views.reduce((a, b) => (b.median_ms > a.median_ms ? b : a), views[0]);
  const over = views.filter((t) => t.median_ms >= BUDGET_MS);
  summary.unshift(
    `${RECORDS.toLocaleString('en-US')} records over ${DAYS} days; ${RUNS} runs per view; slowest view: ${worst.store} "${worst.view}" median ${worst.median_ms.toFixed(0)} ms (max ${worst.max_ms.toFixed(0)} ms).`,
    over.length
      ? `Budget: FAILED, ${over.length} view(s) with a median of ${BUDGET_MS} ms or more: ${over.map((t) => `${t.store} "${t.view}" ${t.median_ms.toFixed(0)} ms`).join('; ')}.`
      : `Budget: met, every view's median under ${BUDGET_MS} ms on ${stores.join(' and ')}.`,
  );
  const md = [
    `# Dashboard API timings (${new Date().toISOString()})`,
    '',
    ...summary,
    '',
    '## Views (whole view as the page loads it: median and max of the runs)',
    '',
    summaryTable(all, stores),
    '',
    '## Filling the store',
    '',
    fillTable(fills),
    '',
    sizesTable(sizes),
    '',
    '## Every call',
    '',
    markdown(all),
    '',
  ].join('\n');
  const outDir = resolve(__dirname, '../../bench/results');
  mkdirSync(outDir, { recursive: true });
  for (const ext of ['md', 'json']) {
    const latest = join(outDir, `dashboard-latest.${ext}`);
    if (existsSync(latest)) renameSync(latest, join(outDir, `dashboard-previous.${ext}`));
  }
  writeFileSync(join(outDir, 'dashboard-latest.md'), md);
  const json = {
    at: new Date().toISOString(),
    records: RECORDS,
    days: DAYS,
    runs: RUNS,
    budget_ms: BUDGET_MS,
    budget_met: over.length === 0,
    fills,
    sizes,
    timings: all,
  };
  writeFileSync(join(outDir, 'dashboard-latest.json'), JSON.stringify(json, null, 2));
  return { md, over };
}

async function main(): Promise<void> {
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const run: StoreRun = { all: [], fills: [], sizes: {} };
  const summary: string[] = [];
  if (STORES.has('sqlite')) await benchSqlite(now, run);
  const pgUrl = process.env.DATABASE_URL;
  if (pgUrl && STORES.has('postgres')) await benchPostgres(now, pgUrl, run);
  else if (!pgUrl) summary.push('PostgreSQL: skipped (DATABASE_URL is not set).');
  const { md, over } = report(run, summary);
  process.stdout.write(`${md}\nwritten to bench/results/dashboard-latest.{md,json}\n`);
  if (over.length) {
    process.stderr.write(`dashboard benchmark: ${over.length} view(s) over the ${BUDGET_MS} ms budget\n`);
    process.exitCode = 1;
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
