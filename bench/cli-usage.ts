/**
 * `tollgate usage` at tens of thousands of groups: fills a SQLite store with the dashboard benchmark's records
 * (bench/dashboard.ts: 2000 customers, 12 agents, 16 models over 35 days), then times the CLI printing every group of
 * the groupings an operator runs, as a table, as CSV and as JSON, each in its own process as a user runs it.
 *
 *   npm run bench:cli                                   1,000,000 records, each run once
 *   BENCH_RECORDS=200000 npm run bench:cli              another size
 *   BENCH_STORE=/tmp/cli.db npm run bench:cli           the store at that path: filled first if it does not exist,
 *                                                       kept afterwards (so that later runs skip the filling)
 *   BENCH_RUNS=3                                        each command this many times
 *   BENCH_CLIS=dist/cli/index.js,/other/dist/cli/index.js   builds to compare, run alternately (A/B in one run)
 *
 * Prints one JSON line per run: the build, the arguments, the groups printed, the wall time, the CPU time of the
 * process (user + system, from /usr/bin/time when the machine has it: the figure that does not depend on the
 * machine's load), its peak RSS, the bytes written and the load average at the start. Not part of npm test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openStore } from '../storage';
import { generate } from './dashboard';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 1_000_000);
const RUNS_EACH = Number(process.env.BENCH_RUNS ?? 1);
const CLIS = (process.env.BENCH_CLIS ?? resolve(__dirname, '../cli/index.js')).split(',').map((p) => resolve(p));
const TIME = '/usr/bin/time';

const RUNS: string[][] = [
  ['-g', 'customer_id,model', '--all'],
  ['-g', 'customer_id,model', '--all', '--csv'],
  ['-g', 'customer_id,model', '--all', '--json'],
  ['-g', 'customer_id,model,agent', '--all'],
  ['-g', 'customer_id,model'],
];

async function fill(db: string): Promise<number> {
  const seeding = performance.now();
  const store = await openStore(`sqlite:${db}`);
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  for (const batch of generate(RECORDS, now)) await store.insertBatch(batch);
  await store.close();
  return Math.round((performance.now() - seeding) / 100) / 10;
}

function groupsIn(out: string, args: string[]): number {
  if (args.includes('--json')) return (JSON.parse(out) as unknown[]).length;
  if (args.includes('--csv')) return out.split('\r\n').length - 2;
  return out.split('\n\n')[0].split('\n').length - 2;
}

/** One CLI process: its output, and its CPU seconds and peak RSS when /usr/bin/time can measure them. */
function runCli(cli: string, args: string[]): { out: string; cpu_s?: number; max_rss_mb?: number } {
  if (!existsSync(TIME))
    return { out: execFileSync(process.execPath, [cli, ...args], { maxBuffer: 1 << 30 }).toString() };
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-time-'));
  try {
    const report = join(dir, 'time');
    const child = spawnSync(TIME, ['-o', report, '-f', '%U %S %M', process.execPath, cli, ...args], {
      maxBuffer: 1 << 30,
    });
    if (child.status !== 0) throw new Error(`${args.join(' ')}: exit ${child.status}: ${child.stderr.toString()}`);
    const [user, sys, rssKb] = readFileSync(report, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
    return {
      out: child.stdout.toString(),
      cpu_s: Math.round((user + sys) * 100) / 100,
      max_rss_mb: Math.round(rssKb / 1024),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const kept = process.env.BENCH_STORE;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-bench-'));
  try {
    const db = kept ? resolve(kept) : join(dir, 'tollgate.db');
    const seed_s = existsSync(db) ? null : await fill(db);
    const config = join(dir, 'cli.yaml');
    writeFileSync(config, `storage: { url: "sqlite:${db}" }\n`);
    process.stdout.write(`${JSON.stringify({ node: process.version, records: RECORDS, store: db, seed_s })}\n`);
    for (const args of RUNS) {
      for (let run = 0; run < RUNS_EACH; run++) {
        for (const cli of CLIS) {
          const load = Math.round(loadavg()[0] * 10) / 10;
          const started = performance.now();
          const { out, ...cost } = runCli(cli, ['usage', ...args, '--from', '60d', '--config', config]);
          const seconds = Math.round((performance.now() - started) / 10) / 100;
          const line = {
            cli,
            args: args.join(' '),
            groups: groupsIn(out, args),
            seconds,
            ...cost,
            bytes: out.length,
            load,
          };
          process.stdout.write(`${JSON.stringify(line)}\n`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
