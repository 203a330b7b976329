import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { PROJECT_ROOT } from './fixtures';

export const CLI = resolve(PROJECT_ROOT, 'dist/cli/index.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs the built `tollgate` as a child process with pipes for its output (no terminal), and resolves when it
 * exits. A run still going after `timeoutMs` is killed (signal SIGKILL in the result), so a hang fails the test.
 */
export function runCli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CliRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 15_000);
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}
