/**
 * The scheduled reconciliation (reconcile/schedule.ts): on real SQLite stores, two instances sharing one store run
 * each provider's day once; a failed run is tried again only after retry_ms; and in a running gateway a provider
 * whose admin API hangs and then fails never holds a proxied request. The admin API is a loopback server answering
 * with the built payloads of test/fixtures/reconcile.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { alertsSchema } from '../../config/alerts';
import { reconcileSchema } from '../../config/reconcile';
import { ReconcileSchedule } from '../../reconcile/schedule';
import { createLogger } from '../../runtime/logger';
import { openStore } from '../../storage';
import type { UsageStore } from '../../storage/store';
import { adminGet } from '../helpers/admin';
import { startTestGateway, chatThrough } from '../helpers/gateway';
import { gatewayRecord } from '../helpers/gateway-record';
import { jsonReply, providerAdminApi } from '../helpers/provider-admin-api';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const D22 = Date.UTC(2025, 10, 22);
const MODEL = 'gpt-4o-mini-2024-07-18';
const silent = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));

describe('reconciliation on a schedule', () => {
  const upstream = new TestUpstream();
  let dir: string;
  const stores: UsageStore[] = [];

  before(async () => {
    await upstream.start();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-reconcile-schedule-'));
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });
  after(async () => {
    await upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An instance's schedule over the store at `file`, its clock at `clock.now`. */
  async function instance(file: string, clock: { now: number }) {
    const store = await openStore(`sqlite:${join(dir, file)}`, { writerThread: false });
    await store.migrate();
    stores.push(store);
    const schedule = new ReconcileSchedule({
      reconcile: reconcileSchema.parse({
        providers: { openai: { admin_key: 'sk-admin-schedule-test', base_url: `${upstream.url}/openai/v1` } },
        schedule: { at: '02:00', window_days: 2, retry_ms: 3_600_000 },
      }),
      alerts: alertsSchema.parse({}),
      store,
      queryUsage: (q) => store.queryUsage(q),
      logger: silent,
      now: () => clock.now,
    });
    return { store, schedule };
  }

  it('two instances sharing the store: the day runs once, after schedule.at, over the trailing window', async () => {
    upstream.respondWith(providerAdminApi);
    const clock = { now: D22 + 3600_000 }; // 01:00 UTC: not due yet
    const a = await instance('shared.db', clock);
    const b = await instance('shared.db', clock);
    await a.store.insertBatch([
      gatewayRecord('openai', MODEL, D22 - 2 * DAY, { input: 1_000_000, cacheRead: 200_000, output: 300_000 }, '0.345'),
      gatewayRecord('openai', MODEL, D22 - DAY, { input: 2_000_000, output: 500_000 }, '0.6'),
    ]);
    expect(await Promise.all([a.schedule.tick(), b.schedule.tick()])).to.deep.equal([0, 0]);

    clock.now = D22 + 3 * 3600_000; // 03:00: due
    const made = await Promise.all([a.schedule.tick(), b.schedule.tick()]);
    expect(made.sort()).to.deep.equal([0, 1]);
    expect(await Promise.all([a.schedule.tick(), b.schedule.tick()])).to.deep.equal([0, 0]);

    const runs = await a.store.reconciliationRuns!().list(10, null);
    expect(runs.map((r) => [r.status, r.rangeFrom, r.rangeTo])).to.deep.equal([['ok', D22 - 2 * DAY, D22]]);
    const report = JSON.parse((await a.store.reconciliationRuns!().get(runs[0].id))!.report!);
    expect(report.lines.map((l: any) => [l.day, l.status])).to.deep.equal([
      ['2025-11-20', 'match'],
      ['2025-11-21', 'match'],
    ]);

    clock.now += DAY; // the next day is due again, on whichever instance asks first
    expect(await b.schedule.tick()).to.equal(1);
    expect(await a.store.reconciliationRuns!().list(10, null)).to.have.length(2);
  });

  it('a failed run is stored and tried again only after retry_ms', async () => {
    upstream.respondWith(() => jsonReply({ error: { message: 'internal' } }, 500));
    const clock = { now: D22 + 3 * 3600_000 };
    const { store, schedule } = await instance('retry.db', clock);
    expect(await schedule.tick()).to.equal(1);
    clock.now += 1800_000;
    expect(await schedule.tick()).to.equal(0);
    upstream.respondWith(providerAdminApi);
    clock.now += 1800_000;
    expect(await schedule.tick()).to.equal(1);
    const runs = await store.reconciliationRuns!().list(10, null);
    expect(runs.map((r) => r.status)).to.deep.equal(['ok', 'failed']);
    expect(runs[1].error).to.match(/500/);
    expect(runs[1].error).to.not.include('sk-admin');
  });

  it('in a running gateway, a provider admin API that hangs and fails never holds a proxied request', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    upstream.respondWith((req) =>
      req.url.includes('/organization/')
        ? { ...jsonReply({ error: { message: 'unavailable' } }, 500), until: held }
        : undefined,
    );
    const gw = await startTestGateway(
      upstream.url,
      `reconcile:
  providers: { openai: { admin_key: "sk-admin-gateway-schedule", base_url: "${upstream.url}/openai/v1" } }
  schedule: { at: "00:00", check_ms: 1000 }`,
    );
    try {
      const deadline = Date.now() + 10_000;
      while (!upstream.received.some((r) => r.url.includes('/organization/')) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(
        upstream.received.some((r) => r.url.includes('/organization/')),
        'the run asked the admin API',
      ).to.equal(true);
      // The run waits on the provider: requests through the gateway are answered meanwhile.
      for (let i = 0; i < 5; i++) {
        const res = await chatThrough(gw);
        expect(res.statusCode).to.equal(200);
        await res.body.text();
      }
      release();
      let answer: any;
      while (Date.now() < deadline) {
        answer = await adminGet(gw, '/api/reconciliation');
        if (answer.runs.length > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(answer.runs.map((r: any) => [r.provider, r.status])).to.deep.equal([['openai', 'failed']]);
      expect(answer.runs[0].error).to.match(/500/);
    } finally {
      release();
      await gw.stop();
    }
  });
});
