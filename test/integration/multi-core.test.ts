import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { expect } from 'chai';
import { request } from 'undici';
import { workerCount } from '../../runtime/cluster';
import { openStore } from '../../storage';
import { OPENAI_KEY, providerBlock, TEST_ADMIN_TOKEN, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { spawnGateway, spawnOneWorkspace, stopGateway, type GatewayProcess } from '../helpers/process';
import { scrape, total } from '../helpers/prometheus';
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

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * GET /metrics with the admin token on a connection of its own (the cluster hands connections to the workers in
 * turn), through undici's global dispatcher, so that the answer is checked against the OpenAPI document.
 */
async function scrapeOnNewConnection(adminUrl: string): Promise<Answer> {
  const res = await request(`${adminUrl}/metrics`, {
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    reset: true,
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
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

  describe('GET /metrics while a worker cannot answer the primary (stopped with SIGSTOP)', () => {
    const upstream = new TestUpstream();
    let gw: GatewayProcess | undefined;
    let stopped: number | undefined;
    /** A worker left stopped would outlive the suite: resumed whatever happens, even when mocha exits mid-test. */
    const resume = () => {
      if (stopped === undefined) return;
      try {
        process.kill(stopped, 'SIGCONT');
      } catch {
        // already gone
      }
      stopped = undefined;
    };

    before(() => upstream.start());
    after(async () => {
      resume();
      process.off('exit', resume);
      if (gw && gw.child.exitCode === null) await stopGateway(gw);
      await upstream.stop();
    });

    it('answers 503 metrics_unavailable with Retry-After, logs it once, and answers 200 again once the worker does', async function () {
      this.timeout(90_000);
      gw = await spawnOneWorkspace(upstream.url, 'workers: 2');
      for (let i = 0; i < 600 && !gw.stderr().includes('2 worker processes serve'); i++)
        await new Promise((r) => setTimeout(r, 50));
      const adminUrl = gw.adminUrl!;
      expect((await scrapeOnNewConnection(adminUrl)).status, 'both workers answering').to.equal(200);

      const workers = childrenOf(gw.child.pid!);
      expect(workers).to.have.length(2);
      stopped = workers[1];
      process.on('exit', resume);
      process.kill(stopped, 'SIGSTOP');

      // A connection handed to the stopped worker waits for it; of two at once, the primary hands at least one to
      // the worker that runs (it hands a worker no second connection before it took the first), and that one answers.
      const pending: Promise<Answer>[] = [];
      const refused: Answer[] = [];
      for (let round = 0; round < 2; round++) {
        const pair = [scrapeOnNewConnection(adminUrl), scrapeOnNewConnection(adminUrl)];
        pending.push(...pair);
        refused.push(await Promise.race(pair));
      }
      for (const answer of refused) {
        expect(answer.status).to.equal(503);
        expect(answer.headers['retry-after']).to.equal('5');
        expect(answer.headers['content-type']).to.match(/^application\/json/);
        const { error } = JSON.parse(answer.body);
        expect(error.code).to.equal('metrics_unavailable');
        expect(error.type).to.equal('gateway_error');
      }

      resume();
      const settled = await Promise.all(pending);
      expect(settled.map((a) => a.status).filter((s) => s !== 200 && s !== 503)).to.deep.equal([]);
      const after = await scrapeOnNewConnection(adminUrl);
      expect(after.status, 'the worker answers again').to.equal(200);
      const samples = await scrape(adminUrl);
      expect(total(samples, 'tollgate_admin_errors_total', { code: 'metrics_unavailable' })).to.equal(
        settled.filter((a) => a.status === 503).length,
      );

      const stderr = gw.stderr();
      expect(stderr.match(/did not answer the metrics gather/g), stderr).to.have.length(1);
      expect(stderr.match(/every worker answers the metrics gather again/g), stderr).to.have.length(1);
      expect(gw.output().filter((l) => l.includes('metrics scrape failed'))).to.deep.equal([]);
      expect(await stopGateway(gw)).to.equal(0);
    });
  });
});
