import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import { workerCount } from '../../runtime/cluster';
import { openStore } from '../../storage';
import { OPENAI_KEY, providerBlock, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { spawnGateway, type GatewayProcess } from '../helpers/process';
import { TestUpstream } from '../helpers/upstream';

/** Processes whose parent is `pid` (the cluster workers of a primary). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPUs this process may run on, counted from its affinity list in /proc ("0-3,8,10-11" is 7). */
function allowedCpus(): number {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'latin1'))![1];
  return list.split(',').reduce((n, range) => {
    const [from, to = from] = range.split('-').map(Number);
    return n + to - from + 1;
  }, 0);
}

/** One request on a connection of its own, so that the cluster hands successive requests to different workers. */
function post(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/v1/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': TEST_GATEWAY_KEY,
          authorization: `Bearer ${OPENAI_KEY}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('multi-core mode (server.workers / tollgate start --workers)', () => {
  it('workerCount: a number, "auto" (one per core), and refuses nonsense', () => {
    expect(workerCount(undefined)).to.equal(1);
    expect(workerCount(3)).to.equal(3);
    expect(workerCount('2')).to.equal(2);
    expect(workerCount('auto'), 'one worker per CPU this process may run on').to.equal(allowedCpus());
    expect(() => workerCount('0')).to.throw(/workers/);
    expect(() => workerCount('many')).to.throw(/workers/);
  });

  describe('the real process with two workers', () => {
    const upstream = new TestUpstream();
    let gw: GatewayProcess;

    before(async function () {
      this.timeout(60_000);
      await upstream.start();
      gw = await spawnGateway(`
server: { host: 127.0.0.1, port: 0, workers: 2 }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstream.url)}
plugins:
  - use: usage-recorder
    options: { flush_interval_ms: 60000, batch_size: 10000 }
`);
      // The port answers as soon as one worker listens; the primary says when all of them do.
      for (let i = 0; i < 600 && !gw.stderr().includes('2 worker processes serve'); i++)
        await new Promise((r) => setTimeout(r, 50));
    });
    after(async () => {
      if (gw.child.exitCode === null) gw.child.kill('SIGKILL');
      await upstream.stop();
    });

    it('serves from two worker processes; SIGTERM stops them all and every worker writes its records to the shared store', async function () {
      this.timeout(60_000);
      expect(gw.stderr()).to.include('2 worker processes serve');
      expect(childrenOf(gw.child.pid!)).to.have.length(2);
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++)
        statuses.push(await post(gw.url, JSON.stringify({ model: 'gpt-4o-mini', messages: [] })));
      expect(
        statuses.every((s) => s === 200),
        `statuses ${statuses.join(',')}`,
      ).to.equal(true);

      gw.child.kill('SIGTERM');
      expect(await gw.exited).to.equal(0);
      expect(childrenOf(gw.child.pid!)).to.have.length(0);
      const store = await openStore(`sqlite:${join(gw.dir, 'tollgate.db')}`);
      try {
        const [total] = await store.queryUsage({ from: 0, to: Date.now() + 1000, groupBy: [] });
        expect(total.requests).to.equal(30);
      } finally {
        await store.close();
      }
      // The first start created no key of its own (GATEWAY_KEY is set), and no worker announced one either.
      expect(gw.stderr()).not.to.include('created a gateway key');
    });
  });
});
