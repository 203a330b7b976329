#!/usr/bin/env node
// System calls per request of one gateway build: a count that does not move with the machine's load. The gateway
// runs natively behind the mock provider; after a warm-up, each round attaches `strace -c -f` to every thread of the
// gateway, sends its requests and divides each call's count by them (writev: the socket writes; pwrite64: the SQLite
// writer; futex and epoll_pwait: the threads waking).
//   node bench/syscalls.mjs [--root DIR] [--config bench|plain] [--metrics on|off] [--traced]
//                           [--mode chat|stream] [--warmup 2000] [--requests 2000] [--rounds 1] [--parallel 8]
//                           [--keep-tmp] (keep the gateway's data folder, strace's counts in it)
// Needs strace on the PATH.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { bodyOf, HEADERS, startGateway, startMock } from './lib/gateway-process.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const MODE = opt('--mode', 'chat');
const WARMUP = Number(opt('--warmup', 2000));
const REQUESTS = Number(opt('--requests', 2000));
const ROUNDS = Number(opt('--rounds', 1));
const PARALLEL = Number(opt('--parallel', 8));
const CONFIG = opt('--config', 'bench');
const side = {
  root: opt('--root', undefined) && resolve(opt('--root')),
  config: CONFIG,
  metrics: opt('--metrics', CONFIG === 'plain' ? 'off' : 'on'),
  traced: argv.includes('--traced'),
};

const gw = await startGateway(await startMock(), side);
const dir = gw.dir; // strace's counts go in the gateway's data folder, removed with it
const dispatcher = new Agent({ connections: PARALLEL });
const body = bodyOf(MODE);
let errors = 0;

async function send(n) {
  let left = n;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (left-- > 0) {
        const res = await request(gw.url, { method: 'POST', headers: HEADERS, body, dispatcher });
        await res.body.text();
        if (res.statusCode !== 200) errors++; // reported: a round with errors is not a clean count
      }
    }),
  );
}

/** One round under strace: the system calls of the gateway's threads while REQUESTS requests are served. */
async function straceRound(r) {
  const file = join(dir, `strace.${r}`);
  const tracer = spawn('strace', ['-c', '-f', '-o', file, '-p', String(gw.pid)], { stdio: 'ignore' });
  await new Promise((res) => setTimeout(res, 1000)); // attached to every thread
  await send(REQUESTS);
  tracer.kill('SIGINT');
  await new Promise((res) => tracer.on('exit', res));
  const calls = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
    if (m) calls[m[2]] = Number((Number(m[1]) / REQUESTS).toFixed(2));
  }
  return calls;
}

await send(WARMUP);
const rounds = [];
for (let r = 0; r < ROUNDS; r++) rounds.push(await straceRound(r));
console.log(JSON.stringify({ ...side, mode: MODE, warmup: WARMUP, requests: REQUESTS, errors, rounds }));
process.exit(0);
