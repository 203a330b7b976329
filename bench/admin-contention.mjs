// The admin_contention scenario of bench/run.mjs: does the control plane hurt the data plane?
//
// A gateway (the bench config, admin API on) starts on a SQLite store seeded with the dashboard benchmark's
// records (bench/seed-store.ts, 100,000 by default: --admin-records N). Proxied chat at 2 connections runs against
// the mock provider, alternately alone ("idle") and while one client loops on the heaviest dashboard query,
// GET /api/usage?group_by=customer_id,model&interval=hour (the last 30 days), one call after the other
// ("contention"). Reported: p50/p99 of the proxied requests in both states, round by round, and the admin calls'
// own latency and statuses. Target: the p99 under contention within 2x the idle p99 and at most 25 ms above it.
//
//   node bench/run.mjs --scenarios admin_contention [--quick] [--admin-records N] [--admin-rounds N]
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const HEAVY_QUERY = '/api/usage?group_by=customer_id,model&interval=hour';
const CONNECTIONS = 2;

/**
 * Runs the scenario with bench/run.mjs's helpers and returns its result (bench/results JSON: `admin_contention`).
 * h: { quick, records, rounds, root, tmp, log, freePort, startTollgate, runLoad, waitQuiet, chatBody }
 */
export async function adminContention(h) {
  const name = 'tollgate-admin';
  const data = join(h.tmp, `${name}-data`);
  mkdirSync(data, { recursive: true });
  h.log(`admin_contention: seeding ${h.records.toLocaleString('en-US')} records into ${data}/tollgate.db`);
  const seeded = spawnSync(
    process.execPath,
    [join(h.root, 'dist', 'bench', 'seed-store.js'), join(data, 'tollgate.db'), String(h.records)],
    {
      cwd: h.root,
      encoding: 'utf8',
      timeout: 900_000,
    },
  );
  if (seeded.status !== 0) {
    h.log(
      `admin_contention skipped: seeding failed: ${(seeded.stderr || seeded.error?.message || '').trim().split('\n').slice(-3).join(' | ')}`,
    );
    return undefined;
  }
  const seed = JSON.parse(seeded.stdout.trim().split('\n').pop());
  h.log(`admin_contention: seeded in ${seed.seconds} s`);

  const token = `bench-admin-${randomBytes(16).toString('hex')}`;
  const adminPort = await h.freePort();
  if (!(await h.startTollgate(name, await h.freePort(), { admin: { port: adminPort, token } }))) return undefined;
  const adminUrl = `http://127.0.0.1:${adminPort}${HEAVY_QUERY}`;
  const sc = { path: '/chat/completions', body: h.chatBody, mode: 'plain', c: CONNECTIONS };

  // One call first: its size and time say what the loop does (and that the admin API answers).
  const first = await adminCall(adminUrl, token);
  h.log(
    `admin_contention: ${HEAVY_QUERY} -> ${first.status}, ${(first.bytes / 2 ** 20).toFixed(1)} MiB in ${first.ms.toFixed(0)} ms`,
  );
  await h.runLoad('admin_contention', sc, name, {
    duration: h.quick ? 0.5 : 2,
    warmup: 0,
    label: 'admin_contention_warmup',
  });

  const run = (label) =>
    h.runLoad('admin_contention', sc, name, { label, duration: h.quick ? 4 : 10, warmup: h.quick ? 0.5 : 2 });
  const rounds = [];
  for (let i = 0; i < h.rounds; i++) {
    await h.waitQuiet();
    const idle = await run('admin_contention_idle');
    await h.waitQuiet();
    const loop = adminLoop(adminUrl, token);
    const busy = await run('admin_contention_busy');
    const admin = await loop.stop();
    if (!idle || !busy) continue;
    const round = {
      idle: latency(idle),
      contention: latency(busy),
      admin,
      other_cpu_pct: Math.max(idle.other_cpu_pct ?? 0, busy.other_cpu_pct ?? 0),
      steal_pct: Math.max(idle.steal_pct ?? 0, busy.steal_pct ?? 0),
      gw_cpu_pct: { idle: idle.procs?.gw?.cpu_pct, contention: busy.procs?.gw?.cpu_pct },
    };
    rounds.push(round);
    h.log(
      `admin_contention round ${i + 1}: idle p50 ${round.idle.p50} p99 ${round.idle.p99} ms; contention p50 ${round.contention.p50} p99 ${round.contention.p99} ms; ` +
        `admin calls ${admin.calls} (${Object.entries(admin.status)
          .map(([s, n]) => `${n}x ${s}`)
          .join(', ')}), median ${admin.p50_ms} ms; other CPU ${round.other_cpu_pct}%`,
    );
  }
  if (!rounds.length) return undefined;
  const med = (f) => median(rounds.map(f));
  return {
    records: h.records,
    seed_s: seed.seconds,
    connections: CONNECTIONS,
    query: HEAVY_QUERY,
    first_call: first,
    rounds,
    idle: { p50: med((r) => r.idle.p50), p99: med((r) => r.idle.p99) },
    contention: { p50: med((r) => r.contention.p50), p99: med((r) => r.contention.p99) },
  };
}

/** A run in which no request started and completed (the gateway stalled for the whole window) has null latencies. */
function latency(run) {
  const l = run.latency_ms;
  return {
    p50: l?.p50 ?? null,
    p99: l?.p99 ?? null,
    max: l?.max ?? null,
    requests: run.requests,
    errors: run.errors + run.non2xx + run.timeouts,
  };
}

/** Median, a null value counting as the largest (a stalled run). */
function median(xs) {
  const s = xs.map((x) => x ?? Infinity).sort((a, b) => a - b);
  const m = s[Math.floor(s.length / 2)];
  return Number.isFinite(m) ? m : null;
}

/** One admin call, its body read whole (as a dashboard or script would) but not parsed. */
async function adminCall(url, token) {
  const t = performance.now();
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(120_000),
    });
    const body = await res.arrayBuffer();
    return { status: res.status, bytes: body.byteLength, ms: performance.now() - t };
  } catch (err) {
    return { status: err.name === 'TimeoutError' ? 'timeout' : 'error', bytes: 0, ms: performance.now() - t };
  }
}

/** Calls `url` one after the other until stopped; stop() waits for the call in flight and summarises them all. */
function adminLoop(url, token) {
  let stopped = false;
  const calls = [];
  const running = (async () => {
    while (!stopped) calls.push(await adminCall(url, token));
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      const status = {};
      for (const c of calls) status[c.status] = (status[c.status] ?? 0) + 1;
      const ms = calls.map((c) => c.ms);
      return {
        calls: calls.length,
        status,
        p50_ms: Math.round(median(ms)),
        max_ms: Math.round(Math.max(...ms)),
        mib: Math.round((calls.reduce((a, c) => a + c.bytes, 0) / 2 ** 20) * 10) / 10,
      };
    },
  };
}

/** The report's section: one row per round, then the medians against the target. */
export function adminContentionSection(ac, table, num) {
  if (!ac) return [];
  const rows = ac.rounds.map((r, i) => [
    `round ${i + 1}`,
    num(r.idle.p50, 2),
    num(r.idle.p99, 2),
    num(r.contention.p50, 2),
    num(r.contention.p99, 2),
    num(r.contention.p99 == null || r.idle.p99 == null ? null : r.contention.p99 - r.idle.p99, 2),
    `${r.admin.calls} (${Object.entries(r.admin.status)
      .map(([s, n]) => `${n}x ${s}`)
      .join(', ')})`,
    num(r.admin.p50_ms, 0),
    num(r.other_cpu_pct, 0),
  ]);
  const goal = adminContentionTarget(ac);
  rows.push([
    'median',
    num(ac.idle.p50, 2),
    num(ac.idle.p99, 2),
    num(ac.contention.p50, 2),
    num(ac.contention.p99, 2),
    num(goal.delta, 2),
    '',
    '',
    '',
  ]);
  return [
    `### Proxied chat while the heaviest dashboard query loops (\`admin_contention\`)`,
    '',
    `${ac.records.toLocaleString('en-US')} records (seeded in ${ac.seed_s} s); chat at ${ac.connections} connections, alone (idle) and while one client loops on ` +
      `\`GET ${ac.query}\` (first call: ${ac.first_call.status}, ${num(ac.first_call.bytes / 2 ** 20, 1)} MiB in ${num(ac.first_call.ms, 0)} ms). Latencies in ms.`,
    '',
    table(
      [
        'round',
        'idle p50',
        'idle p99',
        'contention p50',
        'contention p99',
        '+p99',
        'admin calls',
        'admin p50 ms',
        'other CPU %',
      ],
      rows,
    ),
  ];
}

/** The issue's target: p99 under contention within 2x the idle p99 and at most +25 ms. */
export function adminContentionTarget(ac) {
  if (ac.contention.p99 == null || ac.idle.p99 == null) return { delta: null, ratio: null, met: false };
  const delta = ac.contention.p99 - ac.idle.p99;
  return { delta, ratio: ac.contention.p99 / ac.idle.p99, met: ac.contention.p99 <= 2 * ac.idle.p99 && delta <= 25 };
}
