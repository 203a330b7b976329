/**
 * `tollgate usage` at tens of thousands of groups: fills a SQLite store with the dashboard benchmark's records
 * (bench/dashboard.ts: 2000 customers, 12 agents, 16 models over 35 days), then times the CLI printing every group of
 * the groupings an operator runs, as a table, as CSV and as JSON, each in its own process as a user runs it.
 *
 *   npm run build && node dist/bench/cli-usage.js              1,000,000 records
 *   BENCH_RECORDS=200000 node dist/bench/cli-usage.js          another size
 *
 * Prints one JSON line per run: the arguments, the groups printed, the wall time and the bytes written. Not part of
 * npm test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openStore } from '../storage';
import { generate } from './dashboard';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 1_000_000);
const CLI = resolve(__dirname, '../cli/index.js');

const RUNS: string[][] = [
  ['-g', 'customer_id,model', '--all'],
  ['-g', 'customer_id,model', '--all', '--csv'],
  ['-g', 'customer_id,model', '--all', '--json'],
  ['-g', 'customer_id,model,agent', '--all'],
  ['-g', 'customer_id,model'],
];

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-bench-'));
  try {
    const db = join(dir, 'tollgate.db');
    const seeding = performance.now();
    const store = await openStore(`sqlite:${db}`);
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    for (const batch of generate(RECORDS, now)) await store.insertBatch(batch);
    await store.close();
    const config = join(dir, 'cli.yaml');
    writeFileSync(config, `storage: { url: "sqlite:${db}" }\n`);
    const seeded = { records: RECORDS, seed_s: Math.round((performance.now() - seeding) / 100) / 10 };
    process.stdout.write(`${JSON.stringify({ node: process.version, ...seeded })}\n`);
    for (const args of RUNS) {
      const started = performance.now();
      const out = execFileSync(process.execPath, [CLI, 'usage', ...args, '--from', '60d', '--config', config], {
        maxBuffer: 1024 * 1024 * 1024,
      }).toString();
      const seconds = Math.round((performance.now() - started) / 10) / 100;
      const groups = args.includes('--json')
        ? (JSON.parse(out) as unknown[]).length
        : args.includes('--csv')
          ? out.split('\r\n').length - 2
          : out.split('\n\n')[0].split('\n').length - 2;
      process.stdout.write(`${JSON.stringify({ args: args.join(' '), groups, seconds, bytes: out.length })}\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
