/**
 * bench/lib/gateway-process.mjs, as the measuring scripts use it: a gateway's data folder (/tmp/tollgate-measure-*)
 * is removed when the gateway stops and when the script is interrupted (SIGINT), and kept with --keep-tmp.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { waitFor } from '../helpers/wait';

/** A bench script: starts the mock and one gateway, prints the gateway's folder and PID, stops it when told. */
const SCRIPT = `import { startGateway, startMock } from ${JSON.stringify(join(PROJECT_ROOT, 'bench/lib/gateway-process.mjs'))};
const gw = await startGateway(await startMock(), { config: 'plain' });
process.stdout.write(JSON.stringify({ dir: gw.dir, pid: gw.pid }) + '\\n');
process.stdin.on('data', () => process.kill(gw.pid, 'SIGTERM'));
setInterval(() => undefined, 1000);
`;

describe('bench/lib startGateway: its data folder', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-bench-dirs-'));
  const script = join(scratch, 'bench-script.mjs');
  writeFileSync(script, SCRIPT);
  const started: ChildProcess[] = [];
  const kept: string[] = [];

  after(() => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const dir of [...kept, scratch]) rmSync(dir, { recursive: true, force: true });
  });

  async function run(...args: string[]): Promise<{ child: ChildProcess; dir: string; exited: Promise<unknown> }> {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    started.push(child);
    const exited = new Promise((r) => child.once('exit', r));
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]);
      });
      void exited.then(() => reject(new Error(`the bench script exited early: ${out}`)));
    });
    const { dir } = JSON.parse(line) as { dir: string };
    expect(dir).to.match(/tollgate-measure-/);
    expect(existsSync(join(dir, 'gateway.config.yaml')), 'the folder while the gateway runs').to.equal(true);
    return { child, dir, exited };
  }

  it('is removed when the gateway stops, while the script runs on', async function () {
    this.timeout(60_000);
    const { child, dir, exited } = await run();
    child.stdin!.write('stop\n');
    await waitFor(() => !existsSync(dir), 10_000, 'the folder removed');
    expect(child.exitCode, 'the script still runs').to.equal(null);
    child.kill('SIGINT');
    await exited;
  });

  it('is removed when the script is interrupted (SIGINT), the gateway killed with it', async function () {
    this.timeout(60_000);
    const { child, dir, exited } = await run();
    child.kill('SIGINT');
    await exited;
    expect(existsSync(dir)).to.equal(false);
  });

  it('stays with --keep-tmp', async function () {
    this.timeout(60_000);
    const { child, dir, exited } = await run('--keep-tmp');
    kept.push(dir);
    child.kill('SIGINT');
    await exited;
    expect(existsSync(join(dir, 'gateway.config.yaml'))).to.equal(true);
  });
});
