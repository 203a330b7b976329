import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { adminGet } from '../helpers/admin';
import { startTestGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { scrape, total } from '../helpers/prometheus';
import { missingService } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

const SUITE = 'full disk';

/** Writes a file until the disk holding `dir` has no room left. */
function fillDisk(dir: string): string {
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  for (let size = 4096; size >= 1; size = Math.floor(size / 2)) {
    // the last partial blocks too, so that no append of a spill line fits
    try {
      const fdTail = openSync(filler, 'a');
      try {
        writeSync(fdTail, Buffer.alloc(size, 1));
      } finally {
        closeSync(fdTail);
      }
    } catch {
      // no room for this size: try a smaller one
    }
  }
  return filler;
}

/**
 * The usage store's disk fills up: the store (SQLite) refuses every write with SQLITE_FULL, and the spill file on
 * the same disk cannot be written either. Nothing is lost: readiness and metrics say the store is failing writes,
 * the records go to storage.spill_fallback (or wait in memory without one), and the log says where they are. The
 * disk is a small tmpfs mounted for the suite (root is needed; without it the suite is SKIPPED, and FAILS in CI).
 */
describe('reliability: a full disk', function () {
  this.timeout(120_000);
  const upstream = new TestUpstream();
  let disk: string;
  let mounted = false;
  const fallback = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
  let gw: TestGateway | undefined;

  before(async function () {
    disk = mkdtempSync(join(tmpdir(), 'tollgate-disk-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk], { stdio: 'pipe' });
      mounted = true;
    } catch (err) {
      missingService(SUITE, `cannot mount a tmpfs (root is needed): ${String(err).split('\n')[0]}`);
      this.skip();
    }
    await upstream.start();
  });
  after(async () => {
    await gw?.stop().catch(() => undefined);
    await upstream.stop();
    if (mounted) execFileSync('umount', ['-l', disk]);
    rmSync(fallback, { recursive: true, force: true });
  });
  afterEach(async () => {
    await gw?.stop().catch(() => undefined);
    gw = undefined;
    rmSync(join(disk, 'filler'), { force: true });
    for (const dir of [disk, fallback]) execFileSync('sh', ['-c', `rm -rf ${dir}/*`]);
  });

  const start = (options: { fallback: boolean; recorder?: string }) =>
    startTestGateway(
      upstream.url,
      `
storage: { url: "sqlite:${disk}/tollgate.db"${options.fallback ? `, spill_fallback: "${fallback}"` : ''} }
plugins:
  - use: auth
  - use: usage-recorder
    options: { flush_interval_ms: 20, spill_path: "${disk}/spill.jsonl"${options.recorder ?? ''} }
`,
    ).then((g) => (gw = g));
  const ask = (g: TestGateway) =>
    openaiClient(g).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const ready = async (g: TestGateway) => {
    const res = await fetch(`${g.url}/readyz`);
    return {
      status: res.status,
      body: (await res.json()) as { status: string; checks: Record<string, string>; degraded: string[] },
    };
  };
  const stored = async (g: TestGateway) => (await adminGet(g, '/api/requests?limit=1000')).data.length as number;
  const logsOf = (g: TestGateway) => g.logs.map((line) => JSON.parse(line) as Record<string, unknown>);

  it('readiness and metrics report the store failing writes; at shutdown the records go to the fallback, and a restart stores them', async () => {
    const first = await start({ fallback: true });
    expect((await ready(first)).status).to.equal(200);
    fillDisk(disk);
    for (let i = 0; i < 50; i++) await ask(first);
    await waitFor(
      async () => (await ready(first)).body.checks.store === 'failed',
      20_000,
      '/readyz to report the store',
    );
    // Degraded, not out of service: records spill meanwhile (probes.readiness.fail_on lets the store fail it).
    expect(await ready(first)).to.deep.include({ status: 200 });
    expect((await ready(first)).body).to.deep.include({ status: 'degraded', degraded: ['store'] });
    expect(total(await scrape(first.adminUrl!), 'tollgate_store_writes_failing')).to.equal(1);
    await first.stop();
    gw = undefined;

    const logs = logsOf(first);
    const spillFailed = logs.find(
      (l) => l.msg === 'usage spill file cannot be written: writing to the fallback location',
    );
    expect(spillFailed).to.include({ errorCode: 'ENOSPC', path: `${disk}/spill.jsonl` });
    const left = logs.find((l) => l.msg === 'usage store unavailable at shutdown: records left in the spill file');
    expect(left).to.include({ records: 50, path: join(fallback, 'spill.jsonl') });
    expect(logs.some((l) => /lost/.test(String(l.msg)))).to.equal(false);
    const lines = readFileSync(join(fallback, 'spill.jsonl'), 'utf8').trim().split('\n');
    expect(new Set(lines.map((l) => JSON.parse(l).id)).size).to.equal(50);

    rmSync(join(disk, 'filler'));
    const second = await start({ fallback: true });
    await waitFor(async () => (await stored(second)) === 50, 20_000, 'the 50 records to be replayed');
    expect((await ready(second)).status).to.equal(200);
    await waitFor(() => !existsSync(join(fallback, 'spill.jsonl')), 5000, 'the fallback spill file to be replayed');
  });

  it('without a fallback, records that no spill file takes wait in memory, and reach the store once there is room', async () => {
    const g = await start({ fallback: false, recorder: ', batch_size: 1, max_in_memory: 2' });
    await ask(g);
    await waitFor(async () => (await stored(g)) === 1, 10_000, 'the first record');
    fillDisk(disk);
    for (let i = 0; i < 20; i++) await ask(g);
    await waitFor(
      async () => total(await scrape(g.adminUrl!), 'tollgate_store_spill_held_records') > 0,
      20_000,
      'records held in memory',
    );
    const held = logsOf(g).find(
      (l) => l.msg === 'usage spill file cannot be written: records kept in memory until it can',
    );
    expect(held).to.include({ errorCode: 'ENOSPC', next: 'memory' });
    rmSync(join(disk, 'filler'));
    await waitFor(async () => (await stored(g).catch(() => 0)) === 21, 60_000, 'all 21 records in the store');
    expect(total(await scrape(g.adminUrl!), 'tollgate_store_spill_dropped_records_total')).to.equal(0);
  });
});
