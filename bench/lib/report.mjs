#!/usr/bin/env node
// Renders a bench result (bench/results/*.json) as Markdown tables: per scenario, the targets side by side with
// ratios to the direct call and to the bare proxy, then the goals (met or not), then the change against a previous
// result.
//   node bench/lib/report.mjs bench/results/latest.json [bench/results/previous.json]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { adminContentionSection, adminContentionTarget } from '../admin-contention.mjs';
import { governanceSection } from './governance-table.mjs';

const num = (x, d = 1) => (x == null || !Number.isFinite(x) ? '-' : x.toFixed(d));
const signed = (x, d = 2) => (x == null || !Number.isFinite(x) ? '-' : (x >= 0 ? '+' : '') + x.toFixed(d));
const ratio = (a, b) => (a == null || b == null || !b ? null : a / b);
const thousands = (x) => (x == null ? '-' : Math.round(x).toLocaleString('en-US'));

function table(header, rows) {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) =>
    '| ' + r.map((c, i) => (i === 0 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join(' | ') + ' |';
  return [
    line(header),
    '|' + w.map((n, i) => (i === 0 ? '-'.repeat(n + 2) : '-'.repeat(n + 1) + ':')).join('|') + '|',
    ...rows.map(line),
  ].join('\n');
}

/** The run of one scenario and target. */
export function pick(result, scenario, target) {
  return result?.runs?.find((r) => r.scenario === scenario && r.target === target);
}

const SCENARIO_TITLES = {
  chat_c1: 'Non-streamed chat completion, 1 connection',
  chat_c32: 'Non-streamed chat completion, 32 connections',
  stream_c8: 'SSE stream (20 content chunks, 23 events), 8 connections',
  slow_stream_c8: 'Slow provider: SSE stream with 20 ms between chunks, 8 connections',
  upload_c1: '20 MiB multipart upload (audio transcription), model field first (streamed through), 1 connection',
  upload_spooled_c1: '20 MiB multipart upload, file first (received whole, then sent), 1 connection',
};

/**
 * What disturbed a case: CPU that other processes used, and CPU time the hypervisor kept from this machine (steal;
 * runs from before it was read have none), both in % of one core.
 */
const NOISE_HEADERS = ['other CPU %', 'steal %'];
const NOISE_LIMIT_PCT = 20;
const noiseCells = (r) => [num(r.other_cpu_pct, 0), num(r.steal_pct, 0)];
const disturbed = (r) => r.other_cpu_pct > NOISE_LIMIT_PCT || r.steal_pct > NOISE_LIMIT_PCT;

function errorsOf(r) {
  return r.errors + r.non2xx + (r.bad_stream_end ?? 0);
}

function plainTable(result, sc) {
  const direct = pick(result, sc, 'direct');
  const bare = pick(result, sc, 'bare');
  const rows = result.runs
    .filter((r) => r.scenario === sc)
    .map((r) => {
      const l = r.latency_ms;
      const gw = r.procs?.gw;
      return [
        r.target,
        thousands(r.rps),
        num(ratio(r.rps, direct?.rps), 2),
        num(ratio(r.rps, bare?.rps), 2),
        num(l.p50, 3),
        num(l.p90, 3),
        num(l.p99, 3),
        r.target === 'direct' ? '' : signed(direct && l.p50 - direct.latency_ms.p50, 3),
        r.target === 'direct' ? '' : signed(direct && l.p99 - direct.latency_ms.p99, 3),
        gw ? thousands(gw.cpu_us_per_req) : '-',
        gw ? num(gw.cpu_pct, 0) : '-',
        gw ? num(gw.peak_rss_mb, 0) : '-',
        errorsOf(r),
        ...noiseCells(r),
      ];
    });
  return table(
    [
      'target',
      'req/s',
      'x direct',
      'x bare',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      '+p50 ms',
      '+p99 ms',
      'gw CPU µs/req',
      'gw CPU %',
      'peak RSS MiB',
      'errors',
      ...NOISE_HEADERS,
    ],
    rows,
  );
}

function streamTable(result, sc) {
  const direct = pick(result, sc, 'direct');
  const bare = pick(result, sc, 'bare');
  const rows = result.runs
    .filter((r) => r.scenario === sc)
    .map((r) => {
      const gw = r.procs?.gw;
      return [
        r.target,
        thousands(r.rps),
        num(ratio(r.rps, direct?.rps), 2),
        num(ratio(r.rps, bare?.rps), 2),
        num(r.ttfb_ms.p50, 2),
        num(r.ttfb_ms.p99, 2),
        r.target === 'direct' ? '' : signed(direct && r.ttfb_ms.p50 - direct.ttfb_ms.p50),
        r.target === 'direct' || r.target === 'bare' ? '' : signed(bare && r.ttfb_ms.p50 - bare.ttfb_ms.p50),
        num(r.latency_ms.p50, 2),
        num(r.latency_ms.p99, 2),
        gw ? thousands(gw.cpu_us_per_req) : '-',
        gw ? num(gw.peak_rss_mb, 0) : '-',
        r.sse_events_per_response ? `${r.sse_events_per_response.min}-${r.sse_events_per_response.max}` : '-',
        errorsOf(r),
        ...noiseCells(r),
      ];
    });
  return table(
    [
      'target',
      'streams/s',
      'x direct',
      'x bare',
      'TTFB p50',
      'TTFB p99',
      '+TTFB p50 vs direct',
      '+TTFB p50 vs bare',
      'total p50',
      'total p99',
      'gw CPU µs/stream',
      'peak RSS MiB',
      'SSE events',
      'errors',
      ...NOISE_HEADERS,
    ],
    rows,
  );
}

/** Added delay per chunk: growth of the first-to-last-byte span over the direct call, spread over the gaps. */
export function perChunkAdded(result, target) {
  const r = pick(result, 'slow_stream_c8', target);
  const d = pick(result, 'slow_stream_c8', 'direct');
  if (!r?.span_ms || !d?.span_ms || !r.sse_events_per_response) return null;
  const gaps = Math.max(1, r.sse_events_per_response.max - 1);
  return (r.span_ms.p50 - d.span_ms.p50) / gaps;
}

function slowTable(result) {
  const sc = 'slow_stream_c8';
  const direct = pick(result, sc, 'direct');
  const rows = result.runs
    .filter((r) => r.scenario === sc)
    .map((r) => [
      r.target,
      num(r.rps, 1),
      num(r.ttfb_ms.p50, 2),
      r.target === 'direct' ? '' : signed(direct && r.ttfb_ms.p50 - direct.ttfb_ms.p50),
      num(r.gap_ms?.p50, 2),
      num(r.gap_ms?.p99, 2),
      num(r.span_ms?.p50, 1),
      num(r.span_ms?.p99, 1),
      r.target === 'direct' ? '' : signed(perChunkAdded(result, r.target), 3),
      r.procs?.gw ? thousands(r.procs.gw.cpu_us_per_req) : '-',
      errorsOf(r),
      ...noiseCells(r),
    ]);
  return table(
    [
      'target',
      'streams/s',
      'TTFB p50',
      '+TTFB p50',
      'chunk gap p50',
      'chunk gap p99',
      'first→last byte p50',
      'p99',
      'added per chunk ms',
      'gw CPU µs/stream',
      'errors',
      ...NOISE_HEADERS,
    ],
    rows,
  );
}

function uploadTable(result, sc) {
  const direct = pick(result, sc, 'direct');
  const size = result.settings.upload_bytes / 2 ** 20;
  const rows = result.runs
    .filter((r) => r.scenario === sc)
    .map((r) => {
      const gw = r.procs?.gw;
      const rise = gw && r.rss_before_mb != null ? gw.peak_rss_mb - r.rss_before_mb : null;
      return [
        r.target,
        num(r.rps, 1),
        num(r.latency_ms.p50, 2),
        num(r.latency_ms.p99, 2),
        r.target === 'direct' ? '' : signed(direct && r.latency_ms.p50 - direct.latency_ms.p50),
        gw ? num(r.rss_before_mb, 0) : '-',
        gw ? num(gw.peak_rss_mb, 0) : '-',
        rise == null ? '-' : num(rise, 0),
        rise == null ? '-' : num(rise / size, 2),
        gw ? thousands(gw.cpu_us_per_req) : '-',
        errorsOf(r),
        ...noiseCells(r),
      ];
    });
  return table(
    [
      'target',
      'uploads/s',
      'p50 ms',
      'p99 ms',
      '+p50 ms',
      'RSS before MiB',
      'peak RSS MiB',
      'RSS rise MiB',
      'rise / upload size',
      'gw CPU µs/upload',
      'errors',
      ...NOISE_HEADERS,
    ],
    rows,
  );
}

function peakUnderLoad(result, target) {
  const peaks = result.runs
    .filter((r) => r.target === target && r.procs?.gw && !String(r.scenario).startsWith('upload'))
    .map((r) => r.procs.gw.peak_rss_mb);
  const soak = target === 'tollgate' ? result.memory?.soak?.rss_peak_mb : undefined;
  if (soak != null) peaks.push(soak);
  return peaks.length ? Math.max(...peaks) : null;
}

/**
 * The median of `xs` and a distribution-free interval for it (sign test): the k-th smallest to the k-th largest
 * value, with the largest k for which that interval holds the true median with at least 95% probability (9 values:
 * the 2nd to the 8th, 96.1%). Below 6 values no k reaches 95%: the interval is then the smallest to the largest
 * value, and `coverage` says how sure it is.
 */
export function medianInterval(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  const atMost = []; // atMost[j] = P(X <= j), X ~ Binomial(n, 1/2)
  for (let j = 0, c = 1, sum = 0; j <= n; j++) {
    sum += c / 2 ** n;
    atMost.push(sum);
    c = (c * (n - j)) / (j + 1);
  }
  let k = 1;
  while (k + 1 <= n / 2 && 1 - 2 * atMost[k] >= 0.95) k++;
  return { median: s[Math.floor(n / 2)], lo: s[k - 1], hi: s[n - k], coverage: 1 - 2 * atMost[k - 1] };
}

/**
 * Governance on (`tollgate`: auth, limits, a live budget, recording, metrics) against the bare hop in the same run:
 * CPU per request and p99 at one connection, with governance off (`tollgate-plain`) beside it in the note.
 */
function governedTargets(t, add) {
  const cpu = (sc, target) => t(sc, target)?.procs?.gw?.cpu_us_per_req;
  const governed = (sc, label, goal) => {
    const on = ratio(cpu(sc, 'tollgate'), cpu(sc, 'bare'));
    const off = ratio(cpu(sc, 'tollgate-plain'), cpu(sc, 'bare'));
    add(
      `${label}: CPU per request, governed ÷ bare hop`,
      on == null ? null : `${num(on, 2)}x`,
      `≤ ${goal}x`,
      on == null ? null : on <= goal,
      off == null ? '' : `governance off: ${num(off, 2)}x`,
    );
  };
  governed('chat_c32', 'chat, 32 conn', 1.7);
  governed('stream_c8', 'stream, 8 conn', 1.4);
  const p99 = (target) => t('chat_c1', target)?.latency_ms?.p99;
  const on = ratio(p99('tollgate'), p99('bare'));
  const off = ratio(p99('tollgate-plain'), p99('bare'));
  add(
    'chat, 1 conn: p99, governed ÷ bare hop',
    on == null ? null : `${num(on, 2)}x`,
    '≤ 1.5x',
    on == null ? null : on <= 1.5,
    off == null ? '' : `governance off: ${num(off, 2)}x`,
  );
}

/** A cost goal read on the median's interval: met when all of it is within, not met when none is. */
const withinGoal = (interval, goal) => (interval.hi <= goal ? true : interval.lo > goal ? false : 'inconclusive');

/** The benchmark's goals, each with its measured value. */
export function targets(result) {
  const t = (scenario, target) => pick(result, scenario, target);
  const out = [];
  const add = (name, measured, goal, met, note = '') => out.push({ name, measured, goal, met, note });
  const c32 = t('chat_c32', 'tollgate');
  const r1 = ratio(c32?.rps, t('chat_c32', 'portkey')?.rps);
  add('chat, 32 conn: req/s vs Portkey', r1 == null ? null : `${num(r1, 1)}x`, '≥ 5x', r1 == null ? null : r1 >= 5);
  const r2 = ratio(c32?.rps, t('chat_c32', 'bare')?.rps);
  add(
    'chat, 32 conn: req/s vs bare proxy',
    r2 == null ? null : `${num(r2 * 100, 0)}%`,
    '≥ 70%',
    r2 == null ? null : r2 >= 0.7,
  );
  const r2d = ratio(c32?.rps, t('chat_c32', 'bare-dispatch')?.rps);
  if (r2d != null)
    add(
      'chat, 32 conn: req/s vs bare-dispatch',
      `${num(r2d * 100, 0)}%`,
      '≥ 70%',
      r2d >= 0.7,
      'the faster floor: undici dispatch(), no stream objects',
    );
  const c1 = t('chat_c1', 'tollgate');
  const d1 = t('chat_c1', 'direct');
  const a50 = c1 && d1 ? c1.latency_ms.p50 - d1.latency_ms.p50 : null;
  const a99 = c1 && d1 ? c1.latency_ms.p99 - d1.latency_ms.p99 : null;
  add(
    'chat, 1 conn: added p50',
    a50 == null ? null : `${num(a50, 3)} ms`,
    '≤ 0.25 ms',
    a50 == null ? null : a50 <= 0.25,
  );
  add('chat, 1 conn: added p99', a99 == null ? null : `${num(a99, 3)} ms`, '≤ 1 ms', a99 == null ? null : a99 <= 1);
  const s = t('stream_c8', 'tollgate');
  const r3 = ratio(s?.rps, t('stream_c8', 'portkey')?.rps);
  add('stream: streams/s vs Portkey', r3 == null ? null : `${num(r3, 1)}x`, '≥ 10x', r3 == null ? null : r3 >= 10);
  const sb = t('stream_c8', 'bare');
  const dt = s && sb ? s.ttfb_ms.p50 - sb.ttfb_ms.p50 : null;
  add(
    'stream: TTFB p50 over bare proxy',
    dt == null ? null : `${signed(dt, 3)} ms`,
    '≤ 0.5 ms',
    dt == null ? null : dt <= 0.5,
  );
  const sbd = t('stream_c8', 'bare-dispatch');
  if (s && sbd)
    add(
      'stream: TTFB p50 over bare-dispatch',
      `${signed(s.ttfb_ms.p50 - sbd.ttfb_ms.p50, 3)} ms`,
      '≤ 0.5 ms',
      s.ttfb_ms.p50 - sbd.ttfb_ms.p50 <= 0.5,
    );
  const pc = perChunkAdded(result, 'tollgate');
  const pcBare = perChunkAdded(result, 'bare');
  add(
    'slow stream: added delay per chunk',
    pc == null ? null : `${signed(pc, 3)} ms`,
    '0 within noise (≤ 0.1 ms)',
    pc == null ? null : pc <= 0.1,
    pcBare == null ? '' : `bare proxy: ${signed(pcBare, 3)} ms`,
  );
  governedTargets(t, add);
  const peak = peakUnderLoad(result, 'tollgate');
  add(
    'peak RSS under load',
    peak == null ? null : `${num(peak, 0)} MiB`,
    '≤ 130 MiB',
    peak == null ? null : peak <= 130,
  );
  const size = result.settings.upload_bytes / 2 ** 20;
  for (const [sc, label] of [
    ['upload_c1', '20 MiB upload'],
    ['upload_spooled_c1', '20 MiB upload, file first'],
  ]) {
    const up = t(sc, 'tollgate');
    if (!up && sc !== 'upload_c1') continue;
    const rise = up?.procs?.gw && up.rss_before_mb != null ? up.procs.gw.peak_rss_mb - up.rss_before_mb : null;
    add(
      `${label}: RSS rise`,
      rise == null ? null : `${num(rise, 0)} MiB (${num(rise / size, 2)}x)`,
      '< 2x upload size',
      rise == null ? null : rise < 2 * size,
    );
  }
  // The target reads RSS as long after the soak as "before" was read after the warm-up; results without that
  // reading have only the figure at settle_s.
  const soak = result.memory?.soak;
  const soakIdle = soak?.after_idle_vs_before != null;
  const soakRatio = soakIdle ? soak.after_idle_vs_before : soak?.after_vs_before;
  add(
    `soak: RSS ${soakIdle ? `${soak.idle_s} s` : 'after'} vs before`,
    soak
      ? `${num(soak.rss_before_mb, 0)} → ${num(soakIdle ? soak.rss_after_idle_mb : soak.rss_after_mb, 0)} MiB (${signed((soakRatio - 1) * 100, 1)}%)`
      : null,
    'at most +10%',
    soak ? soakRatio <= 1.1 : null,
    soak
      ? `${soak.seconds} s, ${thousands(soak.requests)} requests, peak ${num(soak.rss_peak_mb, 0)} MiB${soakIdle ? `, ${soak.settle_s} s after: ${num(soak.rss_after_mb, 0)} MiB` : ''}`
      : '',
  );
  const norec = t('chat_c32', 'tollgate-norec');
  const onePair = ratio(c32?.rps, norec?.rps);
  // Runs with the repeated measurement (bench/run.mjs alternatingAB) are judged on its median and the median's interval:
  // met when the whole interval is at or above -10%, not met when it is below, else inconclusive (the machine's noise
  // is larger than the difference being judged). Older runs are judged on one pair.
  const ab = result.memory?.recorder_ab;
  const pct = (x) => `${signed((x - 1) * 100, 1)}%`;
  if (ab) {
    const ci = medianInterval(ab.rounds.map((r) => r.ratio));
    const alternating = ab.method === 'alternating';
    add(
      `usage recorder cost (chat, 32 conn, median of ${ab.rounds.length} ${alternating ? 'alternating runs' : 'pairs'})`,
      `${pct(ci.median)} req/s`,
      '≥ -10%',
      ci.lo >= 0.9 ? true : ci.hi < 0.9 ? false : 'inconclusive',
      `${Math.round(ci.coverage * 100)}% interval of the median: ${pct(ci.lo)} to ${pct(ci.hi)}; ${alternating ? 'runs' : 'pairs'}: ${ab.rounds.map((r) => pct(r.ratio)).join(', ')}` +
        (ab.median_cpu_ratio != null ? `; gateway CPU per request: ${pct(ab.median_cpu_ratio)} (median)` : '') +
        `; in the table above: ${pct(onePair)}`,
    );
  } else {
    add(
      'usage recorder cost (chat, 32 conn)',
      onePair == null ? null : `${pct(onePair)} req/s`,
      '≥ -10%',
      onePair == null ? null : onePair >= 0.9,
      norec ? `recorder off: ${thousands(norec.rps)} req/s` : '',
    );
  }
  // Metrics and tracing are measured as gateway CPU per request (what they add to the gateway's own work; req/s on
  // this machine also moves with the loader and the mock sharing the cores): at most +3% and +5%.
  for (const [key, what, goal] of [
    ['metrics_ab', 'Prometheus metrics cost', 1.03],
    ['tracing_ab', 'tracing cost, one request in ten sampled', 1.05],
  ]) {
    const x = result.memory?.[key];
    if (!x) continue;
    const rounds = x.rounds.filter((r) => r.cpu_ratio != null);
    const cpu = rounds.length ? medianInterval(rounds.map((r) => r.cpu_ratio)) : undefined;
    const added = rounds.length ? medianInterval(rounds.map((r) => r.on_cpu_us - r.off_cpu_us)).median : undefined;
    add(
      `${what} (chat, 32 conn, median of ${x.rounds.length} alternating runs)`,
      cpu ? `${pct(cpu.median)} gw CPU/req (${signed(added, 0)} µs)` : null,
      `≤ ${pct(goal)}`,
      cpu ? withinGoal(cpu, goal) : null,
      (cpu
        ? `${Math.round(cpu.coverage * 100)}% interval of the median: ${pct(cpu.lo)} to ${pct(cpu.hi)}; runs: ${rounds.map((r) => pct(r.cpu_ratio)).join(', ')}; `
        : '') +
        `req/s: ${pct(medianInterval(x.rounds.map((r) => r.ratio)).median)} (median); ${x.off} vs ${x.on}` +
        (x.spans ? `; ${thousands(x.spans.exported)} spans exported for ${thousands(x.spans.requests)} requests` : ''),
    );
  }
  const cluster = result.runs.find((r) => r.scenario === 'chat_c32' && /^tollgate-x\d+$/.test(r.target));
  const single =
    result.target_details?.[cluster?.target]?.limit_store === 'redis' ? t('chat_c32', 'tollgate-redis') : c32;
  const rw = ratio(cluster?.rps, single?.rps);
  add(
    `multi-core (${cluster?.target ?? 'workers'}) vs one process`,
    rw == null ? null : `${num(rw, 2)}x`,
    '≥ 1.7x on 2 cores',
    rw == null ? null : rw >= 1.7,
    cluster
      ? `${thousands(cluster.rps)} vs ${thousands(single?.rps)} req/s (${single?.target}); loader, mock${single?.target === 'tollgate-redis' ? ', Redis' : ''} share the 2 cores`
      : '',
  );
  const ac = result.admin_contention;
  if (ac) {
    const goal = adminContentionTarget(ac);
    add(
      'chat p99 while the heaviest dashboard query loops',
      `${num(ac.contention.p99, 1)} ms (idle ${num(ac.idle.p99, 1)} ms, ${signed(goal.delta, 1)} ms)`,
      '≤ 2x idle and ≤ +25 ms',
      goal.met,
      `2 connections, ${ac.records.toLocaleString('en-US')} records, median of ${ac.rounds.length} round(s)`,
    );
  }
  return out;
}

function targetsTable(result) {
  const verdict = (met) => (met == null ? '-' : met === 'inconclusive' ? '?' : met ? 'yes' : 'NO');
  const rows = targets(result).map((x) => [x.name, x.measured ?? 'not measured', x.goal, verdict(x.met), x.note]);
  return table(['target', 'measured', 'goal', 'met', 'note'], rows);
}

function comparison(result, previous) {
  const rows = [];
  for (const r of result.runs) {
    const p = pick(previous, r.scenario, r.target);
    if (!p) continue;
    const metric = (name, now, before, d, lowerIsBetter) => {
      if (now == null || before == null) return;
      const change = before ? ((now - before) / before) * 100 : null;
      rows.push([
        r.scenario,
        r.target,
        name,
        num(before, d),
        num(now, d),
        change == null
          ? '-'
          : `${signed(change, 1)}%${Math.abs(change) >= 10 ? (lowerIsBetter === change < 0 ? ' better' : ' worse') : ''}`,
      ]);
    };
    metric('req/s', r.rps, p.rps, 0, false);
    metric('p50 ms', r.latency_ms?.p50, p.latency_ms?.p50, 3, true);
    metric('p99 ms', r.latency_ms?.p99, p.latency_ms?.p99, 3, true);
    if (r.ttfb_ms) metric('TTFB p50 ms', r.ttfb_ms.p50, p.ttfb_ms?.p50, 3, true);
    metric('gw CPU µs/req', r.procs?.gw?.cpu_us_per_req, p.procs?.gw?.cpu_us_per_req, 0, true);
  }
  return rows.length
    ? table(['scenario', 'target', 'metric', 'previous', 'now', 'change'], rows)
    : 'No scenario in common with the previous result.';
}

/** sustained_20ms: each target's highest rate with p99 under 1 s and under 0.1% errors, and every step. */
function sustainedSection(sustained) {
  const rows = Object.entries(sustained).map(([target, r]) => [
    target,
    r.sustained_rps == null ? 'none' : thousands(r.sustained_rps),
    r.at_connections ?? '-',
    r.steps
      .map((st) => `${st.connections}: ${thousands(st.rps)}/s p99 ${num(st.p99_ms, 1)} ms${st.within ? '' : ' ✗'}`)
      .join('; '),
  ]);
  return [
    '### Sustained rate, provider answering after 20 ms (`sustained_20ms`)',
    '',
    'The highest request rate served with p99 under 1 s and under 0.1% errors, over growing connection counts (✗: a step outside those bounds).',
    '',
    table(['target', 'sustained req/s', 'at connections', 'steps (connections: rate, p99)'], rows),
  ];
}

export function renderReport(result, previous, previousName) {
  const m = result.machine;
  const out = [];
  out.push(`## Tollgate benchmark (${result.quick ? 'quick run' : 'full run'})`);
  out.push('');
  out.push(
    `${m.cpus} cores, ${m.mem_gib} GiB, Node ${m.node}, ${m.platform}. Each case: ${result.settings.duration_s} s measured after ${result.settings.warmup_s} s warm-up, ` +
      `one after the other in one run against the same mock provider. Targets: ${result.targets.join(', ')}.`,
  );
  out.push(
    "`x direct` / `x bare`: the target's rate divided by the direct call's / the bare proxy's. `+p50`: added latency over the direct call. " +
      "`gw CPU`: CPU time of the target's process group over the measured window, per request and as % of one core. Peak RSS: VmHWM during the case. " +
      '`other CPU %`: CPU that processes other than the loader, the mock and the target used during the case, in % of one core: anything above a few % means other jobs disturbed the figures. ' +
      '`steal %`: CPU time the hypervisor gave to other guests while this virtual machine had work, in % of one core: time the case did not get.',
  );
  const noisy = result.runs.filter((r) => disturbed(r) && !String(r.scenario).startsWith('soak'));
  if (noisy.length)
    out.push(
      `**Warning:** other processes used, or the hypervisor took, more than ${NOISE_LIMIT_PCT}% of a core during ${noisy.length} case(s) (${noisy.map((r) => `${r.scenario}/${r.target}`).join(', ')}); run again on a quieter machine before drawing conclusions.`,
    );
  for (const sc of ['chat_c1', 'chat_c32', 'stream_c8', 'slow_stream_c8', 'upload_c1', 'upload_spooled_c1']) {
    if (!result.runs.some((r) => r.scenario === sc)) continue;
    out.push('');
    out.push(`### ${SCENARIO_TITLES[sc]} (\`${sc}\`)`);
    out.push('');
    if (sc === 'slow_stream_c8') out.push(slowTable(result));
    else if (sc.startsWith('upload')) out.push(uploadTable(result, sc));
    else if (sc.startsWith('stream')) out.push(streamTable(result, sc));
    else out.push(plainTable(result, sc));
  }
  if (result.sustained) out.push('', ...sustainedSection(result.sustained));
  const governance = governanceSection(result, {
    t: (sc, target) => pick(result, sc, target),
    table,
    fmt: { num, thousands },
    perChunkAdded,
  });
  if (governance.length) out.push('', ...governance);
  if (result.admin_contention) out.push('', ...adminContentionSection(result.admin_contention, table, num));
  const mem = result.memory ?? {};
  out.push('');
  out.push('### Memory');
  out.push('');
  const memRows = Object.keys(mem.idle_rss_mb ?? {}).map((t) => [
    t,
    num(mem.idle_rss_mb[t], 0),
    num(peakUnderLoad(result, t), 0),
    num(mem[t]?.rss_end_mb, 0),
  ]);
  out.push(table(['target', 'RSS idle after start MiB', 'peak RSS under load MiB', 'RSS at the end MiB'], memRows));
  if (mem.soak) {
    const s = mem.soak;
    out.push('');
    out.push(
      `Soak (tollgate, ${s.seconds} s: chat at 16 connections + streams at 4): ${thousands(s.requests)} requests, ${s.errors} errors; ` +
        `RSS ${num(s.rss_before_mb, 1)} MiB before, peak ${num(s.rss_peak_mb, 1)} MiB, ${num(s.rss_after_mb, 1)} MiB ${s.settle_s} s after (${num(s.after_vs_before, 3)}x)` +
        (s.rss_after_idle_mb == null
          ? '.'
          : `, ${num(s.rss_after_idle_mb, 1)} MiB ${s.idle_s} s after (${num(s.after_idle_vs_before, 3)}x).`),
    );
  }
  out.push('');
  out.push('### Targets');
  out.push('');
  out.push(targetsTable(result));
  if (previous) {
    out.push('');
    out.push(`### Compared with the previous result (${previousName ?? 'the previous run'})`);
    out.push('');
    out.push(comparison(result, previous));
  }
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, prev] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node bench/lib/report.mjs RESULT.json [PREVIOUS.json]');
    process.exit(2);
  }
  const result = JSON.parse(readFileSync(file, 'utf8'));
  const previous = prev ? JSON.parse(readFileSync(prev, 'utf8')) : undefined;
  console.log(renderReport(result, previous, prev));
}
