import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Client } from 'pg';
import type { UsageRecord } from '../../core/usage';
import { openStore } from '../../storage';
import { recordToJson } from '../../storage/record-json';
import type { UsageStore } from '../../storage/store';
import { isDataError, UsageWriteQueue } from '../../storage/write-queue';
import type { TestGateway } from '../helpers/gateway';
import { chatStreamEvents, FaultyUpstream, SSE_TYPE } from '../helpers/faulty-upstream';
import {
  call, chatBody, expectNoSecrets, jsonHeaders, percentile, recordCount, round, runPool, sleep, startGateway, storedIds, streamBody, waitForCount,
} from '../helpers/reliability';
import { recordFigures } from '../helpers/figures';
import { requirePostgres } from '../helpers/services';
import { TcpProxy } from '../helpers/tcp-proxy';
import { waitFor } from '../helpers/wait';

function record(id: string, extra: Partial<UsageRecord> = {}): UsageRecord {
  return {
    id, ts: Date.now() - 1000, workspaceId: 'default', keyId: 'k', provider: 'openai', model: 'gpt-4o-mini', servedModel: 'gpt-4o-mini',
    endpoint: 'chat.completions', status: 200, streamed: false, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0,
    cacheWrite1hTokens: null, reasoningTokens: null, citationTokens: null, searchQueries: null, costPico: 1234n, provenance: 'measured',
    priceVersion: 'v1', latencyMs: 10, ttfbMs: 5, tags: { suite: 'poison' }, errorCode: null, ...extra,
  };
}

const logs: { level: string; msg: string; obj: any }[] = [];
const logger = {
  info: (obj: object, msg?: string) => logs.push({ level: 'info', msg: msg ?? '', obj }),
  warn: (obj: object, msg?: string) => logs.push({ level: 'warn', msg: msg ?? '', obj }),
  error: (obj: object, msg?: string) => logs.push({ level: 'error', msg: msg ?? '', obj }),
};

/** Holds SQLite's write lock from another process for `ms`; resolves when that process let go. */
async function holdWriteLock(dbPath: string, ms: number): Promise<void> {
  const script = `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(dbPath)});
db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  await new Promise((resolve) => child.once('exit', resolve));
}

async function waitUntil(test: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(10);
  }
}

describe('reliability: the usage store fails, slows down, restarts', function () {
  this.timeout(120_000);

  describe('write queue: a poison record is isolated, no good record is ever lost', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-poison-'));
    let store: UsageStore;
    before(async () => {
      store = await openStore(`sqlite:${join(dir, 'usage.db')}`);
    });
    after(() => store.close());
    beforeEach(() => (logs.length = 0));

    /** The real store, refusing (like a CHECK constraint would) every batch that holds a poison id. */
    const poisoned = (bad: (r: UsageRecord) => boolean, calls = { n: 0 }) => ({
      calls,
      insertBatch: (records: readonly UsageRecord[]) => {
        calls.n++;
        if (records.some(bad)) throw Object.assign(new Error('CHECK constraint failed: usage_records'), { code: 'SQLITE_CONSTRAINT_CHECK' });
        return store.insertBatch(records);
      },
    });

    it('classifies data errors (dead-letter) apart from connectivity errors (retry)', () => {
      for (const code of ['23505', '23502', '22021', '22P05', 'SQLITE_CONSTRAINT_NOTNULL', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG']) expect(isDataError({ code }), code).to.equal(true);
      for (const code of ['ECONNREFUSED', 'ECONNRESET', '08006', '57P01', '53300', '40P01', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL']) expect(isDataError({ code }), code).to.equal(false);
      expect(isDataError(new TypeError('The database connection is not open'))).to.equal(false);
      expect(isDataError(new Error('usage store write timed out after 30000 ms'))).to.equal(false);
    });

    it('splits a refused batch: 3 poison records of 500 are dead-lettered, the other 497 are stored', async () => {
      const recs = Array.from({ length: 500 }, (_, i) => record(`p1-${String(i).padStart(4, '0')}`));
      const poison = new Set([recs[7].id, recs[250].id, recs[499].id]);
      const target = poisoned((r) => poison.has(r.id));
      const deadLetterPath = join(dir, 'dead-1.jsonl');
      const q = new UsageWriteQueue(target, { spillPath: join(dir, 'spill-1.jsonl'), deadLetterPath, batchSize: 500, flushIntervalMs: 10, logger });
      for (const r of recs) q.enqueue(r);
      await waitUntil(() => q.stats().deadLettered === 3 && q.stats().inMemory === 0);
      await q.close();
      const ids = await storedIds(store);
      for (const r of recs) expect(ids.has(r.id), r.id).to.equal(!poison.has(r.id));
      const dead = readFileSync(deadLetterPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l).id);
      expect(dead.sort()).to.deep.equal([...poison].sort());
      expect(logs.filter((l) => l.level === 'error' && l.msg.includes('dead-letter')).map((l) => l.obj.recordId).sort()).to.deep.equal([...poison].sort());
      console.log(`      isolated 3 poison records of 500 in ${target.calls.n} insertBatch calls`);
      recordFigures('store-faults', 'poison', { records: 500, poison: 3, insert_batch_calls: target.calls.n });
      expect(target.calls.n).to.be.at.most(60);
      expect(q.stats()).to.include({ queued: 500, written: 497, deadLettered: 3 });
    });

    it('records behind a poison record keep flowing (the queue is not blocked)', async () => {
      const deadLetterPath = join(dir, 'dead-2.jsonl');
      const q = new UsageWriteQueue(poisoned((r) => r.id === 'p2-bad'), { spillPath: join(dir, 'spill-2.jsonl'), deadLetterPath, batchSize: 10, maxInMemory: 20, flushIntervalMs: 10, logger });
      q.enqueue(record('p2-bad'));
      const later = Array.from({ length: 200 }, (_, i) => record(`p2-${i}`));
      for (const r of later) q.enqueue(r);
      await waitUntil(() => q.stats().inMemory === 0 && !q.stats().spillPending);
      await q.close();
      const ids = await storedIds(store);
      expect(later.every((r) => ids.has(r.id))).to.equal(true);
      expect(ids.has('p2-bad')).to.equal(false);
      expect(q.stats().deadLettered).to.equal(1);
    });

    it('a connectivity failure never dead-letters: everything is written once the store is back', async () => {
      let down = true;
      const flaky = {
        insertBatch: (records: readonly UsageRecord[]) => {
          if (down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
          return store.insertBatch(records);
        },
      };
      const q = new UsageWriteQueue(flaky, { spillPath: join(dir, 'spill-3.jsonl'), deadLetterPath: join(dir, 'dead-3.jsonl'), batchSize: 20, flushIntervalMs: 10, retryBaseMs: 5, retryMaxMs: 20, logger });
      const recs = Array.from({ length: 100 }, (_, i) => record(`p3-${i}`));
      for (const r of recs) q.enqueue(r);
      await waitUntil(() => q.stats().failures >= 5);
      down = false;
      await waitUntil(() => q.stats().inMemory === 0);
      await q.close();
      expect(q.stats().deadLettered).to.equal(0);
      expect(existsSync(join(dir, 'dead-3.jsonl'))).to.equal(false);
      const ids = await storedIds(store);
      expect(recs.every((r) => ids.has(r.id))).to.equal(true);
    });

    it('a poison record in the spill file does not block its replay', async () => {
      const spillPath = join(dir, 'spill-4.jsonl');
      const recs = Array.from({ length: 60 }, (_, i) => record(`p4-${i}`));
      writeFileSync(spillPath, recs.map((r) => `${recordToJson(r)}\n`).join(''));
      const q = new UsageWriteQueue(poisoned((r) => r.id === 'p4-30'), { spillPath, deadLetterPath: join(dir, 'dead-4.jsonl'), batchSize: 25, flushIntervalMs: 10, logger });
      await waitUntil(() => !q.stats().spillPending);
      await q.close();
      const ids = await storedIds(store);
      expect(recs.filter((r) => r.id !== 'p4-30').every((r) => ids.has(r.id))).to.equal(true);
      expect(q.stats()).to.include({ deadLettered: 1, replayed: 60 });
    });

    it('PostgreSQL: a NUL byte in a text value (SQLSTATE 22021) dead-letters that record only', async function () {
      const url = await requirePostgres(this, 'store faults: a NUL byte on PostgreSQL');
      const schema = `tg_poison_${process.pid}_${Date.now().toString(36)}`;
      const pg = await openStore(url, { schema });
      try {
        const recs = Array.from({ length: 50 }, (_, i) => record(`p5-${i}`, i === 17 ? { servedModel: 'gpt-4o\u0000-evil' } : {}));
        const q = new UsageWriteQueue(pg, { spillPath: join(dir, 'spill-5.jsonl'), deadLetterPath: join(dir, 'dead-5.jsonl'), batchSize: 50, flushIntervalMs: 10, logger });
        for (const r of recs) q.enqueue(r);
        await waitUntil(() => q.stats().inMemory === 0);
        await q.close();
        const ids = await storedIds(pg);
        expect(recs.filter((r) => ids.has(r.id)).length).to.equal(49);
        expect(ids.has('p5-17')).to.equal(false);
        expect(logs.find((l) => l.level === 'error')?.obj.err.code).to.equal('22021');
      } finally {
        await pg.close();
        const c = new Client({ connectionString: url });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await c.end();
      }
    });
  });

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
      const res = await call(gw, '/v1/chat/completions', { body: stream ? streamBody() : chatBody(), headers: jsonHeaders(gw, { 'x-gateway-metadata-phase': name }) });
      if (res.status !== 200 || res.bodyError) errors++;
      ms.push(res.ms);
    });
    await Promise.all([load, during?.()]);
    return { name, n, p50: round(percentile(ms, 50)), p95: round(percentile(ms, 95)), max: round(Math.max(...ms)), errors };
  }

  function report(phases: Phase[]): void {
    for (const p of phases) console.log(`      ${p.name.padEnd(28)} ${String(p.n).padStart(4)} requests  p50 ${String(p.p50).padStart(6)} ms  p95 ${String(p.p95).padStart(6)} ms  max ${String(p.max).padStart(7)} ms  errors ${p.errors}`);
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
      upstream.respondWith((_req, body) => (body?.stream ? { status: 200, headers: SSE_TYPE, body: chatStreamEvents(), delayMs: 2 } : undefined));
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
      phases.push(await loadPhase(gw, 'store locked 2 s', 240, () => holdWriteLock(join(gw.dataDir, 'tollgate.db'), 2000)));
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
      for (const p of phases) expect(await recordCount(gw, `?filter[phase]=${encodeURIComponent(p.name)}`), p.name).to.equal(p.n);
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
        const { rows } = await c.query('SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()', [appName]);
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
        const sessions = async () => (await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [appName])).rows[0].n;
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
      upstream.respondWith((_req, body) => (body?.stream ? { status: 200, headers: SSE_TYPE, body: chatStreamEvents(), delayMs: 2 } : undefined));
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-outage-'));
      gw = await startGateway(upstream.url, `${recorderYaml(dir)}\nstorage: { url: "${target.toString()}", schema: ${schema} }\n`);
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
      phases.push(await loadPhase(gw, 'database restarted mid-load', 240, async () => {
        await sleep(150);
        relay.cut();
        await sleep(400);
        relay.restore();
      }));
      // The server ends the gateway's sessions (what a failover or an operator's pg_terminate_backend does).
      // Its pool must hold one first: right after the restart phase the writer may still be backing off.
      await gatewaySessionOpen();
      phases.push(await loadPhase(gw, 'database backends killed', 240, async () => {
        for (let i = 0; i < 3; i++) {
          await sleep(120);
          backendsKilled += await killGatewayBackends();
        }
      }));
      phases.push(await loadPhase(gw, 'healthy again'));
      report(phases);
      console.log(`      pg_terminate_backend ended ${backendsKilled} of the gateway's sessions during the load`);
      expect(backendsKilled, 'sessions of the gateway the kill found and ended').to.be.greaterThan(0);
      for (const p of phases.slice(1)) expectUnaffected(phases[0], p);
    });

    it('every record of the run is in PostgreSQL afterwards', async () => {
      const expected = 100 + phases.reduce((n, p) => n + p.n, 0);
      const stored = await waitForCount(gw, expected, 45_000);
      console.log(`      ${stored} of ${expected} records stored; the relay refused ${relay.refused} connections while down`);
      recordFigures('store-faults', 'postgres', { phases, expected, stored, backends_killed: backendsKilled, relay_refused: relay.refused });
      expect(stored).to.equal(expected);
      // Each phase's records, by its tag: none lost, none twice.
      for (const p of phases) expect(await recordCount(gw, `?filter[phase]=${encodeURIComponent(p.name)}`), p.name).to.equal(p.n);
    });

    it('leaked no planted secret', async () => {
      await expectNoSecrets(gw);
    });
  });
});
