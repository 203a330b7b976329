/**
 * Fills a SQLite store with the dashboard benchmark's records (bench/dashboard.ts: 2000 customers, 12 agents, 16
 * models, 35 days before now), through UsageStore.insertBatch so that rollups and tag tables are as in production.
 * bench/run.mjs runs it before the admin_contention scenario starts its gateway on the file.
 *
 *   node dist/bench/seed-store.js <path.db> <records> [customers]   customers: 2000 by default (Zipf-drawn ids); more
 *                                                                    for a store of more groups (bench/csv-export-memory.mjs)
 */
import { openStore } from '../storage';
import { generate } from './dashboard';

async function main(): Promise<void> {
  const [path, count, customers = '2000'] = process.argv.slice(2);
  const records = Number(count);
  if (!path || !Number.isSafeInteger(records) || records < 1)
    throw new Error('usage: seed-store.js <path.db> <records>');
  const store = await openStore(`sqlite:${path}`);
  const started = performance.now();
  try {
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    for (const batch of generate(records, now, Number(customers))) await store.insertBatch(batch);
  } finally {
    await store.close();
  }
  process.stdout.write(
    `${JSON.stringify({ records, seconds: Math.round((performance.now() - started) / 100) / 10 })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
