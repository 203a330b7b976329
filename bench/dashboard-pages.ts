/**
 * The dashboard's pages at a million records, in Debian's Chromium (playwright-core, as the browser tests drive
 * it): a real gateway (with the budget plugin and per-tag budgets) on a big store, each view loaded several times as
 * a person clicks through them, its time from asking to shown read from the page (data-render-ms, the figure the
 * browser tests read), and the screenshots of docs/ taken from those pages.
 *
 *   npm run screenshot:dashboard                  SQLite, 1,000,000 records, generated at --path if missing
 *   node dist/bench/dashboard-pages.js --store postgres --url postgres://... --schema NAME [--generate]
 *
 *   --records N     records of a store generated here (bench/scale.ts's generator, 35 days)  default 1,000,000
 *   --runs N        loads of each view                                                          default 7
 *   --screenshots   write docs/dashboard*.png (palette PNGs through pngquant where installed)
 *
 * One JSON line of results (p50 / p95 per view, ms) goes to stdout; progress to stderr. Not part of npm test.
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { parseConfig } from '../config/load';
import { createLogger } from '../runtime/logger';
import { startGateway } from '../runtime/servers';
import { ensureChromium, launchChromium, signIn } from '../test/dashboard/browser';
import { generatePostgres } from './scale/postgres';
import { generateSqlite } from './scale/sqlite';

const DAY = 86_400_000;
const TOKEN = 'bench-admin-token-for-the-dashboard-pages';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    path: { type: 'string', default: '/tmp/tollgate-dashboard-pages.db' },
    url: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
    schema: { type: 'string', default: 'dashboard_pages' },
    records: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '7' },
    generate: { type: 'boolean', default: false },
    screenshots: { type: 'boolean', default: false },
  },
});
const log = (line: string) => process.stderr.write(`${line}\n`);
const DOCS = resolve(__dirname, '../../docs');

/** The views a person clicks through, and the element that shows each is drawn. */
const VIEWS = [
  ['usage', '#groups'],
  ['requests', '#requests'],
  ['latency', '#latency-models'],
  ['budgets', '#budgets'],
  ['reconciliation', '#view'],
  ['keys', '#keys'],
] as const;

/** The views docs/ shows: [view, shown, file, whole page]. */
const SHOTS = [
  ['latency', '#latency-models', 'dashboard-latency.png', true],
  ['budgets', '#budgets', 'dashboard-budgets.png', false],
  ['usage', '#groups', 'dashboard.png', true],
] as const;

async function storageYaml(): Promise<string> {
  const records = Number(args.records);
  const o = { records, days: 35, end: Math.floor(Date.now() / DAY) * DAY, progress: (n: number) => n };
  if (args.store === 'postgres') {
    if (args.generate) await generatePostgres(args.url, args.schema, o);
    return `storage: { url: "${args.url}", schema: "${args.schema}" }`;
  }
  if (args.generate || !existsSync(args.path)) {
    log(`generating ${records.toLocaleString('en-US')} records in ${args.path}`);
    await generateSqlite(args.path, o);
  }
  return `storage: { url: "sqlite:${args.path}" }`;
}

async function startOnStore(dataDir: string) {
  const yaml = `
server: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0, token: "${TOKEN}", query_timeout_ms: 60000 }
logging: { level: warn }
${await storageYaml()}
plugins:
  - use: auth
  - use: attribution
  - use: budget
  - use: usage-recorder
    options: { spill_path: "${dataDir}/spill.jsonl" }
workspaces:
  - id: default
    name: Demo workspace
    keys: [{ id: demo, label: demo client, key: "\${GATEWAY_KEY}" }]
    limits:
      budgets:
        - { period: month, usd: "250000", alert_at: [0.5, 0.8] }
        - { period: month, usd: "400", per_tag: customer_id }
        - { period: day, usd: "900", per_tag: team }
        - { period: month, usd: "5000", per_tag: feature }
`;
  const config = parseConfig(yaml, { GATEWAY_KEY: 'tg_bench_dashboard_pages_key_0000000000001' }, 'bench config');
  return startGateway(
    { config, path: join(dataDir, 'gateway.config.yaml'), dir: dataDir },
    {
      logger: createLogger('warn'),
      env: {},
    },
  );
}

/** Opens a view by its tab (from another one) and returns its time from asking to shown, as the page measured it. */
async function open(page: Page, view: string, shown: string): Promise<number> {
  await page.click(`a[data-view="${view}"]`);
  await page.waitForSelector(`#view[data-view="${view}"][data-ready="true"]`, { timeout: 120_000 });
  await page.waitForSelector(shown, { timeout: 120_000 });
  return Number(await page.getAttribute('#view', 'data-render-ms'));
}

const quantile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1];

/** A screenshot for docs/: the whole page, or its first screen where the page lists thousands of rows. */
async function shot(page: Page, name: string, fullPage = true): Promise<void> {
  if (!args.screenshots) return;
  const path = join(DOCS, name);
  await page.screenshot({ path, fullPage });
  try {
    execFileSync('pngquant', ['--force', '--skip-if-larger', '--quality', '60-85', '--output', path, path]);
  } catch {
    log(`(pngquant not installed or no gain: ${name} kept as Chromium wrote it)`);
  }
  log(`wrote docs/${name}`);
}

/** Every view RUNS times, one after the other as a person clicks through them; the statement of the top customer. */
async function measure(page: Page): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = {};
  await page.click('[data-range="30d"]');
  await page.waitForSelector('#view[data-view="usage"][data-ready="true"]', { timeout: 120_000 });
  for (let run = 0; run < Number(args.runs); run++)
    for (const [view, shown] of VIEWS) (times[view] ??= []).push(await open(page, view, shown));
  for (const [view, shown, name, fullPage] of SHOTS) {
    await open(page, view, shown);
    await shot(page, name, fullPage);
  }
  await open(page, 'statement', '#statement-pick');
  await page.selectOption('#statement-dim', 'customer_id');
  await page.fill('#statement-value', 'acme');
  await page.click('#statement-pick button[type=submit]');
  await page.waitForSelector('#statement-days', { timeout: 120_000 });
  await shot(page, 'dashboard-statement.png', false);
  for (let run = 0; run < Number(args.runs); run++) {
    await open(page, 'keys', '#keys');
    (times.statement ??= []).push(await open(page, 'statement', '#statement-days'));
  }
  return times;
}

async function main(): Promise<void> {
  const chromium = await ensureChromium();
  if (!chromium) throw new Error('Chromium is needed');
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-dashboard-pages-'));
  const running = await startOnStore(dataDir);
  const browser = await launchChromium(chromium);
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await signIn(page, running.adminUrl!, TOKEN);
    const times = await measure(page);
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await signIn(phone, running.adminUrl!, TOKEN);
    await shot(phone, 'dashboard-phone.png');
    const views = Object.fromEntries(
      Object.entries(times).map(([v, t]) => [v, { p50: quantile(t, 50), p95: quantile(t, 95), runs: t.length }]),
    );
    for (const [v, q] of Object.entries(views)) log(`  ${args.store} ${v}: p50 ${q.p50} ms, p95 ${q.p95} ms`);
    process.stdout.write(`${JSON.stringify({ store: args.store, records: Number(args.records), views })}\n`);
  } finally {
    await browser.close();
    await running.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
