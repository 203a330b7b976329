#!/usr/bin/env node
// CPU per request of two gateways, A and B, loaded in lockstep: every client connection sends its requests to A and B
// in turn, so both meet the same machine load from one request to the next (a busy machine inflates both alike).
// CPU is each process's user + system time from /proc over a round, divided by the requests it served. Prints
// each round's ratio A/B, their median and the 2nd lowest to 2nd highest of them.
//   node bench/interleaved-ab.mjs --a 'root=DIR metrics=on' --b 'metrics=off' [--mode chat|stream]
//                                  [--rounds 9] [--requests 2000] [--parallel 8] [--keep-tmp]
// A side's words: root=DIR (a checkout with dist/ built; default this one), node=PATH (another Node binary, or a
// script that execs one with an environment of its own; root's node_modules must be built for it), metrics=on|off,
// traced (one request in ten sampled, spans sent to the mock) or traced=RATIO (0 samples none: only the unsampled
// path), config=bench|plain|FILE.yaml (a variant of tollgate.bench.yaml), log=LEVEL (the gateway's logging.level,
// default info). Each side's peak RSS is printed.
import { resolve } from 'node:path';
import { Agent, request } from 'undici';
import { bodyOf, cpuSeconds, HEADERS, peakRssMb, startGateway, startMock } from './lib/gateway-process.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const MODE = opt('--mode', 'chat');
const ROUNDS = Number(opt('--rounds', 9));
const REQUESTS = Number(opt('--requests', 2000));
const PARALLEL = Number(opt('--parallel', 8));

function sideOf(spec, name) {
  const side = { name };
  for (const word of spec.split(/\s+/).filter(Boolean)) {
    if (word === 'traced') side.traced = '0.1';
    else if (/^(root|node|metrics|config|traced|log)=/.test(word))
      side[word.slice(0, word.indexOf('='))] = word.slice(word.indexOf('=') + 1);
    else
      throw new Error(
        `cannot read "${word}" (root=DIR, node=PATH, metrics=on|off, config=bench|plain|FILE.yaml, log=LEVEL, traced[=RATIO])`,
      );
  }
  if (side.root) side.root = resolve(side.root);
  if (side.node) side.node = resolve(side.node);
  return side;
}

async function start(side) {
  return { ...side, ...(await startGateway(mockUrl, side)) };
}

const mockUrl = await startMock();
const a = await start(sideOf(opt('--a', ''), 'A'));
const b = await start(sideOf(opt('--b', ''), 'B'));
const dispatcher = new Agent({ connections: PARALLEL * 2 });
const body = bodyOf(MODE);

async function once(side) {
  const res = await request(side.url, { method: 'POST', headers: HEADERS, body, dispatcher });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${side.name}: ${res.statusCode}`);
}

/** A round: each connection sends to A then B, REQUESTS each in all; CPU µs per request of each side. */
async function round(n) {
  let left = n;
  const before = [cpuSeconds(a.pid), cpuSeconds(b.pid)];
  await Promise.all(
    Array.from({ length: PARALLEL }, async (_, i) => {
      while (left-- > 0) {
        // Half the connections start with B, so neither side always goes first.
        const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
        await once(first);
        await once(second);
      }
    }),
  );
  return [((cpuSeconds(a.pid) - before[0]) / n) * 1e6, ((cpuSeconds(b.pid) - before[1]) / n) * 1e6];
}

await round(1000); // warm-up: JIT, connections
const ratios = [];
const perRequest = { A: [], B: [] };
for (let r = 0; r < ROUNDS; r++) {
  const [ca, cb] = await round(REQUESTS);
  perRequest.A.push(ca);
  perRequest.B.push(cb);
  ratios.push(ca / cb);
}
const sorted = (xs) => [...xs].sort((x, y) => x - y);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const pct = (x) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)}%`;
const s = sorted(ratios);
console.log(
  JSON.stringify({
    mode: MODE,
    a: opt('--a', ''),
    b: opt('--b', ''),
    cpuUsPerRequest: { A: Math.round(median(perRequest.A)), B: Math.round(median(perRequest.B)) },
    peakRssMb: { A: peakRssMb(a.pid), B: peakRssMb(b.pid) },
    aVsB: pct(median(ratios)),
    range: ratios.length >= 5 ? `${pct(s[1])} to ${pct(s[s.length - 2])}` : undefined,
    rounds: ratios.map(pct),
  }),
);
process.exit(0);
