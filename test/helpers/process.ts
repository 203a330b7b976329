import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from './fixtures';
import { providerBlock, TEST_ADMIN_TOKEN, TEST_GATEWAY_KEY } from './gateway';
import { registerGateway, rememberGeneratedKeys, snapshotAdmin, type RegisteredGateway } from './secret-scan';

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** The admin listener's address, when the config turns it on (printed before the proxy's). */
  adminUrl: string | undefined;
  dir: string;
  /** Everything the process wrote to stderr so far. */
  stderr: () => string;
  /** Everything it wrote to stdout (its log lines) and stderr, line by line. */
  output: () => string[];
  /** Its entry in the suite-wide secret scan (helpers/secret-scan.ts). */
  scan: RegisteredGateway;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Runs the real `tollgate start` with this YAML as its config file (in a fresh folder) and waits until it listens:
 * `node dist/cli/index.js start`, or `npm start` as the README says (the child's PID is then npm's).
 */
export async function spawnGateway(
  yaml: string,
  env: NodeJS.ProcessEnv = {},
  launch: 'node' | 'npm start' = 'node',
): Promise<GatewayProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-proc-'));
  const config = join(dir, 'gateway.config.yaml');
  writeFileSync(config, yaml);
  const [command, args] =
    launch === 'node'
      ? [process.execPath, [resolve(PROJECT_ROOT, 'dist/cli/index.js'), 'start', '--config', config]]
      : ['npm', ['start', '--', '--config', config]];
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, GATEWAY_KEY: TEST_GATEWAY_KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const lines: string[] = [];
  const collect = (stream: NodeJS.ReadableStream) => {
    let rest = '';
    stream.on('data', (d: Buffer) => {
      const parts = (rest + d.toString('utf8')).split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
    });
    stream.on('end', () => rest && lines.push(rest));
  };
  collect(child.stdout!);
  collect(child.stderr!);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) resolveUrl(m[1]);
    });
    void exited.then((code) => reject(new Error(`gateway exited early (${code}): ${stderr}`)));
  });
  const adminUrl = /admin API and dashboard on (http:\/\/\S+)/.exec(stderr)?.[1];
  // A first start without any key announces the one it created: a secret everywhere but in that announcement.
  rememberGeneratedKeys(stderr, 'the key a first start created');
  const scan = registerGateway({
    kind: 'process',
    logs: () => lines,
    dataDir: dir,
    adminUrl,
    proxyUrl: url,
    alive: () => child.exitCode === null && child.signalCode === null,
  });
  return { child, url, adminUrl, dir, stderr: () => stderr, output: () => lines, scan, exited };
}

/** SIGTERM and wait for the exit code (the admin answers are read first, for the secret scan). */
export async function stopGateway(p: GatewayProcess): Promise<number | null> {
  if (p.child.exitCode === null && p.child.signalCode === null) await snapshotAdmin(p.scan, TEST_ADMIN_TOKEN);
  p.child.kill('SIGTERM');
  return p.exited;
}

/** A process's resident memory, MB (what an operator's `ps` measures). */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/**
 * The real `tollgate start` process with one workspace and its key (TEST_GATEWAY_KEY), the admin listener (and its
 * metrics) on, SQLite, and the providers pointed at the test upstream; `server` adds to its server block.
 */
export function spawnOneWorkspace(upstreamUrl: string, server = ''): Promise<GatewayProcess> {
  return spawnGateway(`
server: { host: 127.0.0.1, port: 0${server ? `, ${server}` : ''} }
admin: { host: 127.0.0.1, port: 0, token: "${TEST_ADMIN_TOKEN}" }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstreamUrl)}
`);
}
