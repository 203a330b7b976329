// Two Tollgate variants compared in one run (node bench/run.mjs --ab SPEC --ab SPEC): what a variant is, how its
// alternating runs pair up, and the table that reports them.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import YAML from 'yaml';
import { medianInterval } from './report.mjs';

/**
 * A variant, from whitespace-separated words: `--flag` or `--flag=value` is a Node flag; `root=DIR` runs the build
 * in DIR (a checkout with dist/ built) instead of this one; `node=PATH` runs it on another Node binary (its
 * node_modules must be built for that Node: give its own root); `name=LABEL` names it; `a.b.c=value` sets a value of the
 * bench config (bench/tollgate.bench.yaml), parsed as YAML (`server.idle_gc_ms=0`).
 *   --ab 'name=semi8 --max-semi-space-size=8' --ab 'name=default'
 */
export function parseVariant(spec, fallbackName, defaultRoot) {
  const variant = { name: fallbackName, root: defaultRoot, nodeFlags: [], settings: [] };
  for (const word of spec.trim().split(/\s+/).filter(Boolean)) {
    if (word.startsWith('--')) variant.nodeFlags.push(word);
    else if (word.startsWith('name=')) variant.name = word.slice(5);
    else if (word.startsWith('root=')) variant.root = resolve(word.slice(5));
    else if (word.startsWith('node=')) variant.node = resolve(word.slice(5));
    else if (/^[a-z_][\w.]*=/.test(word)) {
      const i = word.indexOf('=');
      variant.settings.push([word.slice(0, i).split('.'), YAML.parse(word.slice(i + 1))]);
    } else throw new Error(`--ab: cannot read "${word}" (a Node flag --x, name=, root= or a config path a.b=value)`);
  }
  if (!existsSync(join(variant.root, 'dist', 'cli', 'index.js')))
    throw new Error(`--ab: ${variant.root} has no dist/cli/index.js (build it first)`);
  return variant;
}

/** The bench config with a variant's settings applied. */
export function applySettings(yamlText, settings) {
  if (!settings.length) return yamlText;
  const doc = YAML.parseDocument(yamlText);
  for (const [path, value] of settings) doc.setIn(path, value);
  return String(doc);
}

export function describeVariant(v, defaultRoot) {
  const parts = [...v.nodeFlags, ...v.settings.map(([p, x]) => `${p.join('.')}=${JSON.stringify(x)}`)];
  if (v.root !== defaultRoot) parts.push(`root=${v.root}`);
  if (v.node) parts.push(`node=${v.node}`);
  return parts.length ? parts.join(' ') : '(no flags, bench config as is)';
}

/** What one run of a target gave: the figures an A/B compares. */
export function figures(r) {
  return {
    rps: r.rps,
    cpu_us: r.procs?.gw?.cpu_us_per_req,
    peak_rss_mb: r.procs?.gw?.peak_rss_mb,
    rss_before_mb: r.rss_before_mb,
    p99_ms: r.latency_ms?.p99,
    other_cpu_pct: r.other_cpu_pct,
    steal_pct: r.steal_pct,
  };
}

const mean2 = (x, y) => (x == null || y == null ? undefined : (x + y) / 2);
const round3 = (x) => (x == null || !Number.isFinite(x) ? undefined : Math.round(x * 1000) / 1000);

/**
 * A run of A against the mean of the runs of B on either side of it (B, A, B): a drift of the machine that is
 * linear over the three cancels out.
 */
export function pairUp(a, bBefore, bAfter) {
  const fa = figures(a);
  const [f0, f1] = [figures(bBefore), figures(bAfter)];
  const fb = Object.fromEntries(Object.keys(fa).map((k) => [k, mean2(f0[k], f1[k])]));
  return {
    a: fa,
    b: fb,
    ratio: {
      rps: round3(fa.rps / fb.rps),
      cpu: round3(fa.cpu_us / fb.cpu_us),
      peak_rss: round3(fa.peak_rss_mb / fb.peak_rss_mb),
    },
  };
}

/** The goals a tuning must reach to stay: at least 5% less CPU per request, or at least 15% lower peak RSS. */
export const PAYS = { cpu: 0.95, peak_rss: 0.85 };

/** Medians of the ratios with their sign-test intervals, and whether A pays for itself over B (PAYS). */
export function summariseAB(rounds) {
  const of = (key) => {
    const xs = rounds.map((r) => r.ratio[key]).filter((x) => x != null);
    return xs.length ? medianInterval(xs) : undefined;
  };
  const ratio = { rps: of('rps'), cpu: of('cpu'), peak_rss: of('peak_rss') };
  const noise = (key) => {
    const xs = rounds.flatMap((r) => [r.a[key], r.b[key]]).filter((x) => x != null);
    return xs.length ? { median: medianInterval(xs).median, max: Math.max(...xs) } : undefined;
  };
  const median = (side, key) => {
    const xs = rounds.map((r) => r[side][key]).filter((x) => x != null);
    return xs.length ? medianInterval(xs).median : undefined;
  };
  const sides = Object.fromEntries(
    ['a', 'b'].map((s) => [
      s,
      Object.fromEntries(['rps', 'cpu_us', 'peak_rss_mb', 'rss_before_mb', 'p99_ms'].map((k) => [k, median(s, k)])),
    ]),
  );
  const pays =
    ratio.cpu?.hi <= PAYS.cpu || ratio.peak_rss?.hi <= PAYS.peak_rss
      ? 'yes'
      : ratio.cpu?.lo > PAYS.cpu && ratio.peak_rss?.lo > PAYS.peak_rss
        ? 'no'
        : 'inconclusive';
  return {
    pairs: rounds.length,
    ratio,
    sides,
    other_cpu_pct: noise('other_cpu_pct'),
    steal_pct: noise('steal_pct'),
    pays,
  };
}

const pct = (x) => (x == null ? '-' : `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)}%`);
const interval = (m) => (m ? `${pct(m.median)} (${pct(m.lo)} to ${pct(m.hi)}, ${Math.round(m.coverage * 100)}%)` : '-');
const n = (x, d = 0) => (x == null ? '-' : x.toFixed(d));

/** The A/B result as Markdown: one row per scenario, A's change over B with the 95% interval of its median. */
export function renderAB(result) {
  const { a, b } = result.variants;
  const out = [
    `## Tollgate A/B: ${a.name} against ${b.name} (${result.quick ? 'quick run' : 'full run'})`,
    '',
    `- A \`${a.name}\`: ${a.description}`,
    `- B \`${b.name}\`: ${b.description}`,
    '',
    'Each scenario: one unmeasured run of each, then B, A, B, ..., B (each run measured for the seconds shown after its warm-up); ' +
      'each run of A against the mean of the two runs of B beside it. Median of those ratios, and its interval (sign test). ' +
      `A pays for itself when the whole interval is at least ${Math.round((1 - PAYS.cpu) * 100)}% lower in CPU per request or ` +
      `${Math.round((1 - PAYS.peak_rss) * 100)}% lower in peak RSS; \`?\` when the interval straddles both goals.`,
    '',
    '| scenario | pairs | s each | CPU µs/req A | B | A vs B | peak RSS MiB A | B | A vs B | RSS before A | B | req/s A vs B | other CPU % median (max) | steal % median (max) | A pays |',
    '|---|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---|---:|---:|---|',
  ];
  for (const [scenario, s] of Object.entries(result.scenarios)) {
    if (!s) continue;
    out.push(
      `| ${scenario} | ${s.pairs} | ${s.seconds_each ?? '-'} | ${n(s.sides.a.cpu_us)} | ${n(s.sides.b.cpu_us)} | ${interval(s.ratio.cpu)} | ${n(s.sides.a.peak_rss_mb)} | ` +
        `${n(s.sides.b.peak_rss_mb)} | ${interval(s.ratio.peak_rss)} | ${n(s.sides.a.rss_before_mb)} | ${n(s.sides.b.rss_before_mb)} | ${interval(s.ratio.rps)} | ` +
        `${n(s.other_cpu_pct?.median)} (${n(s.other_cpu_pct?.max)}) | ${n(s.steal_pct?.median)} (${n(s.steal_pct?.max)}) | ${s.pays === 'inconclusive' ? '?' : s.pays} |`,
    );
  }
  return out.join('\n');
}
