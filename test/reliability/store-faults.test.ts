import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from 'pg';
import type { TestGateway } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, SSE_TYPE } from '../helpers/faulty-upstream';
import {
  call,
  chatBody,
  expectNoSecrets,
  jsonHeaders,
  percentile,
  recordCount,
  round,
  runPool,
  startGateway,
  streamBody,
  waitForCount,
} from '../helpers/reliability';
import { recordFigures } from '../helpers/figures';
import { requirePostgres } from '../helpers/services';
import { TcpProxy } from '../helpers/tcp-proxy';
import { waitFor, sleep } from '../helpers/wait';

/** Holds SQLite's write lock from another process for `ms`; resolves when that process let go. */
async function holdWriteLock(dbPath: string, ms: number): Promise<void> {
  const script = `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(dbPath)});
db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  await new Promise((resolve) => child.once('exit', resolve));
}

describe('reliability: the usage store fails, slows down, restarts', function () {
  this.timeout(120_000);

  // ---------------------------------------------------------------- the gateway under load

  interface Phase {
    name: string;
    n: number;
    p50: number;
    p95: number;
    max: number;
    errors: number;
  }

  /** Runs `n` mixed requests (70% JSON, 30% streams), 8 at a time, all tagged phase=<name>; returns latencies. */
  async function loadPhase(gw: TestGateway, name: string, n = 240, during?: () => Promise<void>): Promise<Phase> {
    const ms: number[] = [];
    let errors = 0;
    const load = runPool(n, 8, async (i) => {
      const stream = i % 10 < 3;
      const res = await call(gw, '/v1/chat/completions', {
        body: stream ? streamBody() : chatBody(),
        headers: jsonHeaders(gw, { 'x-gateway-metadata-phase': name }),
      });
      if (res.status !== 200 || res.bodyError) errors++;
      ms.push(res.ms);
    });
    await Promise.all([load, during?.()]);
    return {
      name,
      n,
      p50: round(percentile(ms, 50)),
      p95: round(percentile(ms, 95)),
      max: round(Math.max(...ms)),
      errors,
    };
  }

  function report(phases: Phase[]): void {
    for (const p of phases)
      console.log(
        `      ${p.name.padEnd(28)} ${String(p.n).padStart(4)} requests  p50 ${String(p.p50).padStart(6)} ms  p95 ${String(p.p95).padStart(6)} ms  max ${String(p.max).padStart(7)} ms  errors ${p.errors}`,
      );
  }

  /** Proxied latency must not depend on the store: compared with the healthy phase, with room for CI noise. */
  function expectUnaffected(healthy: Phase, p: Phase): void {
    expect(p.errors, `${p.name}: failed requests`).to.equal(0);
    expect(p.max, `${p.name}: slowest request (a stalled event loop shows here)`).to.be.below(1500);
    expect(p.p50, `${p.name}: p50 vs healthy ${healthy.p50} ms`).to.be.at.most(healthy.p50 * 2.5 + 15);
    expect(p.p95, `${p.name}: p95 vs healthy ${healthy.p95} ms`).to.be.at.most(healthy.p95 * 3 + 60);
  }

  const recorderYaml = (dir: string) => `
plugins:
  - use: auth
  - use: header-strip
  - use: attribution
  - use: usage-recorder
    options: { flush_interval_ms: 20, batch_size: 25, max_in_memory: 100, spill_path: "${dir}/spill.jsonl" }
`;

  describe('SQLite store: down, slow, locked by another process, back', () => {
    const upstream = new FaultyUpstream();
    let gw: TestGateway;
    let mode: 'up' | 'down' | 'slow' = 'up';
    const phases: Phase[] = [];

    before(async () => {
      await upstream.start();
      upstream.respondWith((_req, body) =>
        body?.stream ? { status: 200, headers: SSE_TYPE, body: chatStreamEvents(), delayMs: 2 } : undefined,
      );
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-store-'));
      gw = await startGateway(upstream.url, recorderYaml(dir));
      // The queue holds this very object (the container's UsageStore): faults injected here reach it.
      const store = gw.gateway.store;
      const insert = store.insertBatch.bind(store);
      store.insertBatch = async (records) => {
        if (mode === 'down') throw Object.assign(new Error('usage store down (injected)'), { code: 'ECONNREFUSED' });
        if (mode === 'slow') await sleep(400);
        return insert(records);
      };
      await loadPhase(gw, 'warm-up', 100);
    });
    after(async () => {
      await gw?.stop();
      await upstream.stop();
    });

    it('proxied latency is the same with the store healthy, down, slow or locked', async () => {
      phases.push(await loadPhase(gw, 'healthy'));
      mode = 'down';
      phases.push(await loadPhase(gw, 'store down'));
      await sleep(300);
      mode = 'slow';
      phases.push(await loadPhase(gw, 'store slow (400 ms a batch)'));
      mode = 'up';
      // Another process (e.g. `tollgate usage reprice`) holds SQLite's write lock for 2 s.
      phases.push(
        await loadPhase(gw, 'store locked 2 s', 240, () => holdWriteLock(join(gw.dataDir, 'tollgate.db'), 2000)),
      );
      phases.push(await loadPhase(gw, 'healthy again'));
      report(phases);
      for (const p of phases.slice(1)) expectUnaffected(phases[0], p);
    });

    it('every record of the run is in the store afterwards', async () => {
      const expected = 100 + phases.reduce((n, p) => n + p.n, 0);
      const stored = await waitForCount(gw, expected, 40_000);
      console.log(`      ${stored} of ${expected} records stored`);
      recordFigures('store-faults', 'sqlite', { phases, expected, stored });
      expect(stored).to.equal(expected);
      for (const p of phases)
        expect(await recordCount(gw, `?filter[phase]=${encodeURIComponent(p.name)}`), p.name).to.equal(p.n);
    });

    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });

  describe('PostgreSQL store behind a TCP relay: cut, slow, restarted', function () {
    const upstream = new FaultyUpstream();
    let gw: TestGateway;
    let relay: TcpProxy;
    const schema = `tg_outage_${process.pid}_${Date.now().toString(36)}`;
    // The gateway's connections carry this name, so a separate client can find and kill their backends.
    const appName = `tollgate-outage-${process.pid}`;
    const phases: Phase[] = [];
    let backendsKilled = 0;
    let pgUrl: string | undefined;

    /** SELECT pg_terminate_backend(pid) for every backend of the gateway, from a separate connection; returns how many. */
    async function killGatewayBackends(): Promise<number> {
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      try {
        const { rows } = await c.query(
          'SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
          [appName],
        );
        return rows.filter((r) => r.killed === true).length;
      } finally {
        await c.end();
      }
    }

    /** After an outage the writer reconnects on its own schedule (backoff): wait until it holds a session again. */
    async function gatewaySessionOpen(timeoutMs = 20_000): Promise<void> {
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      try {
        const sessions = async () =>
          (await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [appName]))
            .rows[0].n;
        await waitFor(async () => (await sessions()) > 0, timeoutMs, 'a PostgreSQL session of the gateway');
      } finally {
        await c.end();
      }
    }

    before(async function () {
      pgUrl = await requirePostgres(this, 'store faults: PostgreSQL outage suite');
      const target = new URL(pgUrl);
      relay = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      await relay.start();
      target.host = `127.0.0.1:${relay.port}`;
      target.searchParams.set('application_name', appName);
      await upstream.start();
      upstream.respondWith((_req, body) =>
        body?.stream ? { status: 200, headers: SSE_TYPE, body: chatStreamEvents(), delayMs: 2 } : undefined,
      );
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-outage-'));
      gw = await startGateway(
        upstream.url,
        `${recorderYaml(dir)}\nstorage: { url: "${target.toString()}", schema: ${schema} }\n`,
      );
      await loadPhase(gw, 'warm-up', 100);
    });
    after(async () => {
      await gw?.stop();
      await upstream.stop();
      await relay?.stop();
      if (pgUrl) {
        const c = new Client({ connectionString: pgUrl });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await c.end();
      }
    });

    it('proxied latency is the same with PostgreSQL reachable, cut, slow or restarting', async () => {
      phases.push(await loadPhase(gw, 'healthy'));
      relay.cut();
      phases.push(await loadPhase(gw, 'database unreachable'));
      await sleep(300);
      relay.restore();
      relay.delay(150);
      phases.push(await loadPhase(gw, 'database slow (150 ms/packet)'));
      relay.restore();
      phases.push(
        await loadPhase(gw, 'database restarted mid-load', 240, async () => {
          await sleep(150);
          relay.cut();
          await sleep(400);
          relay.restore();
        }),
      );
      // The server ends the gateway's sessions (what a failover or an operator's pg_terminate_backend does).
      // Its pool must hold one first: right after the restart phase the writer may still be backing off.
      await gatewaySessionOpen();
      phases.push(
        await loadPhase(gw, 'database backends killed', 240, async () => {
          for (let i = 0; i < 3; i++) {
            await sleep(120);
            backendsKilled += await killGatewayBackends();
          }
        }),
      );
      phases.push(await loadPhase(gw, 'healthy again'));
      report(phases);
      console.log(`      pg_terminate_backend ended ${backendsKilled} of the gateway's sessions during the load`);
      expect(backendsKilled, 'sessions of the gateway the kill found and ended').to.be.greaterThan(0);
      for (const p of phases.slice(1)) expectUnaffected(phases[0], p);
    });

    it('every record of the run is in PostgreSQL afterwards', async () => {
      const expected = 100 + phases.reduce((n, p) => n + p.n, 0);
      const stored = await waitForCount(gw, expected, 45_000);
      console.log(
        `      ${stored} of ${expected} records stored; the relay refused ${relay.refused} connections while down`,
      );
      recordFigures('store-faults', 'postgres', {
        phases,
        expected,
        stored,
        backends_killed: backendsKilled,
        relay_refused: relay.refused,
      });
      expect(stored).to.equal(expected);
      // Each phase's records, by its tag: none lost, none twice.
      for (const p of phases)
        expect(await recordCount(gw, `?filter[phase]=${encodeURIComponent(p.name)}`), p.name).to.equal(p.n);
    });

    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });
});
