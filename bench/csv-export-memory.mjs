// The gateway's memory across one export of every group of GET /api/usage.csv, on a SQLite store filled beforehand
// (bench/cli-usage.ts with BENCH_STORE, or any store):
//
//   CSV_STORE=/tmp/cli.db node bench/csv-export-memory.mjs                  this build (dist/)
//   CSV_BUILDS=dist,/other/dist CSV_STORE=... node bench/csv-export-memory.mjs   two builds, one after the other
//   CSV_GROUP_BY=customer_id,model,agent                                   another grouping (default customer_id,model)
//
// Each build's gateway is started on its own, idle; its RSS is read, then one export of the last 60 days with
// limit=all is downloaded at full speed and its RSS read again once the body has ended (after 2 s). The peak is the
// process's VmHWM. Prints one JSON line per build: the groups and bytes exported, RSS before and after, peak, the
// export's wall time and the load average (the wall time depends on the load; the memory does not). Not part of
// npm test.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const STORE = resolve(process.env.CSV_STORE ?? '');
const BUILDS = (process.env.CSV_BUILDS ?? 'dist').split(',').map((p) => resolve(p));
const GROUP_BY = process.env.CSV_GROUP_BY ?? 'customer_id,model';
const TOKEN = 'csv-bench-admin-token-0123456789';

const freePort = () =>
  new Promise((done) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });

const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1');
  const mb = (name) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)[1]) / 102.4) / 10;
  return { rss: mb('VmRSS'), peak: mb('VmHWM') };
};

async function until(url) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${url} never answered`);
}

async function measure(build, dir) {
  const [port, adminPort] = [await freePort(), await freePort()];
  const config = join(dir, 'gateway.yaml');
  writeFileSync(
    config,
    [
      `server: { host: 127.0.0.1, port: ${port} }`,
      `admin: { host: 127.0.0.1, port: ${adminPort}, token: ${TOKEN}, query_timeout_ms: 600000 }`,
      `storage: { url: "sqlite:${STORE}" }`,
      'logging: { level: warn }',
      'workspaces: [{ id: default, keys: [{ id: bench, key: csv-bench-gateway-key-0123456789 }] }]',
      'providers: { openai: { base_url: "http://127.0.0.1:9/v1" } }',
      '',
    ].join('\n'),
  );
  const gw = spawn(process.execPath, [join(build, 'cli', 'index.js'), 'start', '--config', config], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    const admin = `http://127.0.0.1:${adminPort}`;
    await until(`${admin}/healthz`);
    await sleep(2000);
    const before = memory(gw.pid);
    const to = Date.now();
    const q = `group_by=${GROUP_BY}&limit=all&from=${to - 60 * 86_400_000}&to=${to}`;
    const load = Math.round(loadavg()[0] * 10) / 10;
    const started = performance.now();
    const res = await fetch(`${admin}/api/usage.csv?${q}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    let bytes = 0;
    let lines = 0;
    for await (const chunk of res.body) {
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    const seconds = Math.round(performance.now() - started) / 1000;
    await sleep(2000);
    const after = memory(gw.pid);
    return {
      build,
      group_by: GROUP_BY,
      groups: lines - 1,
      bytes,
      rss_before_mb: before.rss,
      rss_after_mb: after.rss,
      peak_rss_mb: after.peak,
      seconds,
      load,
    };
  } finally {
    gw.kill('SIGTERM');
    await new Promise((done) => gw.once('exit', done));
  }
}

if (!process.env.CSV_STORE) throw new Error('CSV_STORE: the SQLite store to export from');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-csv-bench-'));
try {
  for (const build of BUILDS) process.stdout.write(`${JSON.stringify(await measure(build, dir))}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
