// The mock provider and Tollgate gateways as the small measuring scripts start them (bench/syscalls.mjs,
// bench/interleaved-ab.mjs, bench/ingest.mjs): each on a free loopback port, killed when the script exits (Ctrl-C
// included). A gateway's data folder (/tmp/tollgate-measure-*: its config, SQLite store, spill) is removed when it
// stops or the script exits, unless the script was given --keep-tmp.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const KEY = 'tg_bench_measure_key_000000000000000000000001';
/** What every measured request sends: the gateway key, a provider key for the mock and the bench's tags. */
export const HEADERS = {
  'content-type': 'application/json',
  'x-gateway-key': KEY,
  authorization: 'Bearer sk-bench',
  'x-gateway-metadata': '{"agent":"bench","feature":"load-test"}',
  'x-gateway-metadata-customer-id': 'acme',
};
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const children = [];
/** The gateways' data folders not yet removed. */
const dataDirs = new Set();
const KEEP_TMP = process.argv.includes('--keep-tmp');
function removeDataDir(dir) {
  if (!dataDirs.delete(dir) || KEEP_TMP) return;
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
process.on('exit', () => {
  children.forEach((c) => c.kill('SIGKILL'));
  dataDirs.forEach(removeDataDir);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));

export function freePort() {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** Starts `node` (this one by default) with `args` and resolves once a line of its output matches `ready`. */
function startUntil(args, env, ready, node = process.execPath) {
  return new Promise((res, rej) => {
    const child = spawn(node, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let started = false;
    const look = (d) => {
      if (started) return; // the request log lines that follow are read and dropped
      out += d;
      const m = ready.exec(out);
      if (m) {
        started = true;
        res({ child, match: m });
      }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => rej(new Error(`exited ${code}: ${out.slice(-800)}`)));
  });
}

/** The mock provider (bench/mock-upstream.mjs); resolves to its base URL. */
export async function startMock() {
  const mock = await startUntil([join(BENCH, 'mock-upstream.mjs')], { MOCK_PORT: '0' }, /listening on (http:\/\/\S+)/);
  return mock.match[1];
}

/**
 * A gateway of the build in `root` (dist/ built) with bench/tollgate.bench.yaml, tollgate.plain.yaml for config
 * 'plain', the YAML file `config` names (a variant of the bench's), or the config text `yaml` (its ${BENCH_PORT},
 * ${BENCH_DATA}, ${MOCK_URL} and ${GATEWAY_KEY} filled as in those files); `metrics` on or off; `traced`: the ratio
 * of requests sampled ('0.1': one in ten), spans sent to the mock; `log`: the logging level (the configs' own is
 * info); `node`: another Node binary (the build's node_modules must be built for it).
 */
export async function startGateway(
  mockUrl,
  { root = resolve(BENCH, '..'), config = 'bench', metrics = 'on', traced, log, node, yaml: given },
) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-measure-'));
  dataDirs.add(dir);
  const port = await freePort();
  const file = join(dir, 'gateway.config.yaml');
  const source = config.endsWith('.yaml') ? resolve(config) : join(BENCH, `tollgate.${config}.yaml`);
  let yaml = given ?? readFileSync(source, 'utf8');
  if (config !== 'plain' && given === undefined) yaml += `\nmetrics: { enabled: ${metrics === 'on'} }\n`;
  if (log) yaml = yaml.replace(/^(logging:\n\s+level:) \w+$/m, `$1 ${log}`);
  writeFileSync(file, yaml);
  const env = {
    BENCH_PORT: String(port),
    BENCH_DATA: dir,
    MOCK_URL: mockUrl,
    GATEWAY_KEY: KEY,
    TOLLGATE_ADMIN_TOKEN: '',
    ...(traced
      ? {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: mockUrl,
          OTEL_TRACES_SAMPLER: 'traceidratio',
          OTEL_TRACES_SAMPLER_ARG: traced === true ? '0.1' : String(traced),
        }
      : { OTEL_TRACES_EXPORTER: 'none' }),
  };
  const { child } = await startUntil(
    [join(root, 'dist/cli/index.js'), 'start', '--config', file],
    env,
    /listening/,
    node,
  );
  if (child.exitCode !== null || child.signalCode !== null) removeDataDir(dir);
  else child.once('exit', () => removeDataDir(dir));
  return { pid: child.pid, dir, url: `http://127.0.0.1:${port}/v1/chat/completions` };
}

/** User + system CPU seconds of a process (all its threads) so far. */
export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Peak resident memory of a process (all its threads) so far, MiB. */
export function peakRssMb(pid) {
  const kb = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return kb ? Math.round(Number(kb[1]) / 1024) : undefined;
}

/** The request body of a mode: a chat completion, or the same streamed. */
export function bodyOf(mode) {
  return readFileSync(join(BENCH, 'bodies', mode === 'stream' ? 'chat_stream.json' : 'chat.json'));
}
