#!/usr/bin/env node
// The PostgreSQL store's write path, two builds A and B in turn: each round writes --batches batches of --batch
// records of the big-store mix (bench/scale/record.ts, stamped now) through A's UsageStore.insertBatch, then as
// many through B's, each into a database of its own (created afresh, dropped at the end). Per side and round:
// the PostgreSQL backends' CPU per record (run time from /proc/PID/schedstat of the backends connected to that
// side's database), this process's CPU per record (one side writes at a time) and the wall time per record. Prints each
// round, then per measure the median ratio B/A, the 2nd lowest to 2nd highest of the rounds' ratios, and the ratio
// of the sums over all rounds.
//   node bench/store-write-ab.mjs --a DIR --b DIR [--batch 500] [--batches 40] [--rounds 9]
//        [--url postgres://postgres@127.0.0.1:5432/tollgate_write_ab] [--a-sql SQL] [--b-sql SQL]
// --a-sql / --b-sql run on that side's database once it is migrated (e.g. --b-sql 'DROP INDEX usage_records_ts'
// to price one index with the same build on both sides).
// DIR is a checkout with dist/ built (default this one). The first round of each side is a warm-up, not counted.
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';

/** CPU seconds a process has run so far, to the nanosecond (/proc/PID/schedstat; /proc/PID/stat counts ticks). */
const cpuSeconds = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e9;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string', default: ROOT },
    batch: { type: 'string', default: '500' },
    batches: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '9' },
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/tollgate_write_ab' },
    'a-sql': { type: 'string' },
    'b-sql': { type: 'string' },
  },
});
const BATCH = Number(args.batch);
const BATCHES = Number(args.batches);
const ROUNDS = Number(args.rounds);
const base = new URL(args.url);

const urlOf = (db) => Object.assign(new URL(base.href), { pathname: `/${db}` }).href;
const server = new pg.Client({ connectionString: urlOf('postgres') });
await server.connect();

/** CPU seconds so far of every backend connected to `db`. */
async function backendsCpu(db) {
  const { rows } = await server.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [db]);
  const cpu = new Map();
  for (const { pid } of rows)
    try {
      cpu.set(pid, cpuSeconds(pid));
    } catch {
      /* ended */
    }
  return cpu;
}
const cpuBetween = (a, b) => [...b].reduce((s, [pid, t]) => s + t - (a.get(pid) ?? 0), 0);

async function side(name, dir) {
  const db = `${base.pathname.slice(1)}_${name}`;
  await server.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await server.query(`CREATE DATABASE ${db}`);
  const { openStore } = await import(join(resolve(dir), 'dist/storage/index.js'));
  const store = await openStore(urlOf(db));
  const sql = args[`${name}-sql`];
  if (sql) {
    const c = new pg.Client({ connectionString: urlOf(db) });
    await c.connect();
    await c.query(sql);
    await c.end();
  }
  return { name, db, store, rows: [] };
}

await import('reflect-metadata');
const { scaleRecord } = await import(join(ROOT, 'dist/bench/scale/record.js'));
const { rng } = await import(join(ROOT, 'dist/cli/demo-traffic.js'));
const sides = [await side('a', args.a), await side('b', args.b)];

/** One round of one side: the same records (by seed) for both sides of a round, ids unique per side. */
async function round(s, n) {
  const r = rng(1000 + n);
  const batches = [];
  for (let k = 0, g = n * BATCHES * BATCH; k < BATCHES; k++) {
    const batch = [];
    for (let j = 0; j < BATCH; j++, g++) {
      const rec = scaleRecord(r, g, Date.now());
      rec.id = `${s.name}-${g}`;
      batch.push(rec);
    }
    batches.push(batch);
  }
  const pg0 = await backendsCpu(s.db);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const batch of batches) await s.store.insertBatch(batch);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const pgCpu = cpuBetween(pg0, await backendsCpu(s.db));
  const records = BATCHES * BATCH;
  return {
    pg_ms: (pgCpu * 1000) / records,
    store_ms: (cpu.user + cpu.system) / 1000 / records,
    wall_ms: wall / records,
  };
}

const fmt = (x) => x.toFixed(4);
for (let n = 0; n <= ROUNDS; n++) {
  const order = n % 2 ? [...sides].reverse() : sides;
  const out = {};
  for (const s of order) out[s.name] = await round(s, n);
  if (n === 0) continue;
  for (const s of sides) s.rows.push(out[s.name]);
  const line = (k) => `${k} ${fmt(out.a[k])}/${fmt(out.b[k])}`;
  process.stderr.write(`round ${n}: A/B ms per record: ${['pg_ms', 'store_ms', 'wall_ms'].map(line).join('  ')}\n`);
}

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const summary = {};
for (const k of ['pg_ms', 'store_ms', 'wall_ms']) {
  const ratios = sides[0].rows.map((a, i) => sides[1].rows[i][k] / a[k]).sort((x, y) => x - y);
  const total = (s) => s.rows.reduce((sum, r) => sum + r[k], 0);
  summary[k] = {
    a: median(sides[0].rows.map((r) => r[k])),
    b: median(sides[1].rows.map((r) => r[k])),
    ratio_b_a: median(ratios),
    ratio_of_totals: total(sides[1]) / total(sides[0]),
    range: [ratios[1] ?? ratios[0], ratios[ratios.length - 2] ?? ratios[ratios.length - 1]],
  };
}
process.stdout.write(`${JSON.stringify({ batch: BATCH, batches: BATCHES, rounds: ROUNDS, summary }, null, 1)}\n`);
for (const s of sides) {
  await s.store.close();
  await server.query(`DROP DATABASE IF EXISTS ${s.db} WITH (FORCE)`);
}
await server.end();
