// The sustained-rate scenario (sustained_20ms): the public "onthebench" method's throughput figure. The provider
// answers after 20 ms; each target is loaded at growing connection counts, and its sustained rate is the highest
// request rate it served with p99 under 1 s and under 0.1% errors.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const UPSTREAM_WAIT_MS = 20;
const STEPS = [32, 128, 256, 512];
const QUICK_STEPS = [32, 256];
const P99_LIMIT_MS = 1000;
const ERROR_LIMIT = 0.001;

/** The chat body with the mock's 20 ms model (bench/mock-upstream.mjs: a -wait<N> suffix). */
export function waitBody(bodyDir, tmp) {
  const file = join(tmp, 'chat_wait.json');
  const body = JSON.parse(readFileSync(join(bodyDir, 'chat.json'), 'utf8'));
  body.model = `${body.model}-wait${UPSTREAM_WAIT_MS}`;
  writeFileSync(file, JSON.stringify(body));
  return file;
}

const errorsOf = (r) => r.errors + r.non2xx + (r.bad_stream_end ?? 0);

/** Runs every step on every target; returns { target: { sustained_rps, at_connections, steps } }. */
export async function sustainedRates({ sc, targetNames, quick, runLoad, waitQuiet, preflight, log, runs }) {
  const out = {};
  for (const target of targetNames) {
    if (!(await preflight('sustained_20ms', sc, target))) continue;
    const steps = [];
    for (const c of quick ? QUICK_STEPS : STEPS) {
      await waitQuiet();
      const r = await runLoad('sustained_20ms', sc, target, { c, label: `sustained_20ms_c${c}` });
      if (!r) break;
      runs.push(r);
      const total = r.requests + errorsOf(r);
      const step = {
        connections: c,
        rps: r.rps,
        p99_ms: r.latency_ms?.p99,
        error_rate: total ? errorsOf(r) / total : 0,
        gw_cpu_pct: r.procs?.gw?.cpu_pct,
      };
      step.within = step.p99_ms != null && step.p99_ms < P99_LIMIT_MS && step.error_rate < ERROR_LIMIT;
      steps.push(step);
      log(`sustained_20ms  ${target.padEnd(15)} c=${c} rps=${r.rps} p99=${step.p99_ms} errors=${errorsOf(r)}`);
    }
    const best = steps.filter((s) => s.within).sort((a, b) => b.rps - a.rps)[0];
    out[target] = { sustained_rps: best?.rps ?? null, at_connections: best?.connections ?? null, steps };
  }
  return out;
}
