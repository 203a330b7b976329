import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { startTestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const CLI = resolve(PROJECT_ROOT, 'dist/cli/index.js');

/** Runs `tollgate healthcheck` with a config naming `port` (and `host`), as the container's HEALTHCHECK does. */
function healthcheck(dir: string, host: string, port: number, ...args: string[]) {
  const config = join(dir, `health-${port}.yaml`);
  writeFileSync(config, `server: { host: "${host}", port: ${port} }\n`);
  return new Promise<{ code: number; stderr: string }>((done) => {
    const child = execFile(process.execPath, [CLI, 'healthcheck', ...args, '--config', config], (_err, _out, stderr) =>
      done({ code: child.exitCode ?? -1, stderr }),
    );
  });
}

describe('tollgate healthcheck (the container health check)', () => {
  it('exits 0 when the gateway on the configured port answers, 1 with the reason when nothing listens there', async () => {
    const upstream = new TestUpstream();
    await upstream.start();
    const gw = await startTestGateway(upstream.url);
    try {
      const port = Number(new URL(gw.url).port);
      // A wildcard address is checked on the loopback, as a process in the same container reaches it.
      for (const host of ['127.0.0.1', '0.0.0.0'])
        expect(await healthcheck(gw.dataDir, host, port)).to.deep.equal({ code: 0, stderr: '' });
      expect(await healthcheck(gw.dataDir, '127.0.0.1', port, '--ready')).to.deep.equal({ code: 0, stderr: '' });

      const free = createServer();
      await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
      const closed = (free.address() as { port: number }).port;
      await new Promise((r) => free.close(r));
      const down = await healthcheck(gw.dataDir, '127.0.0.1', closed);
      expect(down.code).to.equal(1);
      expect(down.stderr).to.equal(`tollgate: http://127.0.0.1:${closed}/healthz: ECONNREFUSED\n`);
    } finally {
      await gw.stop();
      await upstream.stop();
    }
  });
});
