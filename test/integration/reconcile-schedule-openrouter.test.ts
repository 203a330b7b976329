/**
 * OpenRouter on the daily schedule (reconcile/schedule.ts): its records are read page by page through the admin
 * reader thread (admin/reads/admin-reads.ts, a real worker over a real SQLite file), each looked up on a loopback
 * generation API answering with OpenRouter's recorded generation body (test/fixtures/openrouter/generation_recorded.json),
 * and a range holding more records than a run may look up fails the run before any lookup.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AdminReads } from '../../admin/reads/admin-reads';
import { reportTable } from '../../cli/reconcile';
import { alertsSchema } from '../../config/alerts';
import { reconcileSchema } from '../../config/reconcile';
import { MAX_RECORDS_PER_RUN } from '../../reconcile/run';
import { ReconcileSchedule } from '../../reconcile/schedule';
import { createLogger } from '../../runtime/logger';
import { openStore } from '../../storage';
import type { UsageStore } from '../../storage/store';
import { gatewayRecord } from '../helpers/gateway-record';
import { generationReply } from '../helpers/provider-admin-api';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const D22 = Date.UTC(2025, 10, 22);
const MODEL = 'meta-llama/llama-4-scout-17b-16e-instruct';
const ROUTER_KEY = 'sk-or-v1-PLANTED-SECRET-schedule-0042';
const TOKENS = { input: 64, output: 98 };

describe('reconciliation on a schedule: OpenRouter, record by record through the reader thread', () => {
  const upstream = new TestUpstream();
  const lookups: string[] = [];
  let dir: string;
  let store: UsageStore;
  let reads: AdminReads;
  let lines: string[];

  before(async () => {
    await upstream.start();
    upstream.respondWith((req) => {
      const url = new URL(req.url, 'http://x');
      if (url.pathname !== '/openrouter-api/v1/generation') return undefined;
      const id = url.searchParams.get('id') ?? '';
      lookups.push(id);
      // Every generation billed as recorded, but gen-…-short: OpenRouter counted 4 completion tokens fewer.
      const completion = id.endsWith('-short') ? TOKENS.output - 4 : TOKENS.output;
      return generationReply(id, MODEL, { cost: 0.00003452, tokens: { prompt: 64, completion, cached: 0 } });
    });
    dir = mkdtempSync(join(tmpdir(), 'tollgate-reconcile-schedule-openrouter-'));
  });
  beforeEach(async () => {
    lookups.length = 0;
    lines = [];
  });
  afterEach(async () => {
    await reads?.close();
    await store?.close();
  });
  after(async () => {
    await upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function scheduleOver(file: string, clock: { now: number }) {
    store = await openStore(`sqlite:${join(dir, file)}`, { writerThread: false });
    await store.migrate();
    reads = AdminReads.open(store.readSource(), { timeoutMs: 10_000 });
    const logger = createLogger('info', new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    return new ReconcileSchedule({
      reconcile: reconcileSchema.parse({
        providers: { openrouter: { admin_key: ROUTER_KEY, base_url: `${upstream.url}/openrouter-api/v1` } },
        schedule: { at: '02:00', window_days: 2 },
        // Every day of the window is final, so a difference shows its own status rather than not_final.
        restate_days: 0,
      }),
      alerts: alertsSchema.parse({}),
      store,
      queryUsage: (q) => reads.queryUsage(q),
      listRequests: (q) => reads.generationPage(q),
      logger,
      now: () => clock.now,
    });
  }

  const routed = (id: string, ts: number) => ({
    ...gatewayRecord('openrouter', MODEL, ts, TOKENS, '0.00003452'),
    generationId: id,
  });

  it('is scheduled, and its run looks up each record of the window and compares costs and tokens', async () => {
    const schedule = await scheduleOver('routed.db', { now: D22 + 3 * 3600_000 });
    expect(schedule.providers).to.deep.equal(['openrouter']);
    await store.insertBatch([
      routed('gen-1-agree', D22 - 2 * DAY),
      routed('gen-2-agree', D22 - DAY),
      routed('gen-3-short', D22 - DAY),
      routed('gen-4-today', D22), // outside the window: today is not yet a whole day
    ]);
    expect(await schedule.tick()).to.equal(1);
    expect(lookups.sort()).to.deep.equal(['gen-1-agree', 'gen-2-agree', 'gen-3-short']);
    const [run] = await store.reconciliationRuns!().list(10, null);
    expect([run.provider, run.status, run.pages]).to.deep.equal(['openrouter', 'ok', { generation: 3 }]);
    const report = JSON.parse((await store.reconciliationRuns!().get(run.id))!.report!);
    expect([report.generations.checked, report.generations.matched, report.generations.tokens_differing]).to.deep.equal(
      [3, 2, 1],
    );
    expect(report.generations.lines.map((l: any) => [l.generation_id, l.status])).to.deep.equal([
      ['gen-3-short', 'tokens_differ'],
    ]);
    expect(report.lines.map((l: any) => [l.day, l.status])).to.deep.equal([
      ['2025-11-20', 'match'],
      ['2025-11-21', 'drift'],
    ]);
    expect(lines.join('')).to.not.include(ROUTER_KEY);
    const table = reportTable(report);
    expect(table).to.include('Generations: 3 checked, 2 matched, 0 charged differently, 1 with other tokens');
    expect(table).to.match(/gen-3-short\s+tokens_differ\s+\$0\.00003452\s+\$0\.00003452\s+64\+98\s+64\+94/);
    process.stdout.write(
      `\n      the scheduled OpenRouter run, as tollgate reconcile prints it:\n${table.replace(/^/gm, '      ')}\n`,
    );
  });

  it(`fails a run whose window holds more than ${MAX_RECORDS_PER_RUN} records, before asking OpenRouter anything`, async () => {
    const schedule = await scheduleOver('crowded.db', { now: D22 + 3 * 3600_000 });
    const records = Array.from({ length: MAX_RECORDS_PER_RUN + 1 }, (_, i) => routed(`gen-${i}-many`, D22 - DAY + i));
    for (let i = 0; i < records.length; i += 5000) await store.insertBatch(records.slice(i, i + 5000));
    expect(await schedule.tick()).to.equal(1);
    const [run] = await store.reconciliationRuns!().list(10, null);
    expect(run.status).to.equal('failed');
    expect(run.error).to.include(`more than ${MAX_RECORDS_PER_RUN} openrouter records`);
    expect(lookups).to.deep.equal([]);
  });
});
