/**
 * A stale catalog price found by reconciliation and fixed in one step, as a user runs it: the built CLI, a config
 * file whose override prices claude-sonnet-4-5 at 0.8 of its list price, a SQLite store, and a loopback server
 * answering like Anthropic's Usage & Cost Admin API (built payloads, test/fixtures/reconcile). `reconcile` finds the
 * line priced_differently, `reconcile-fix` adds a dated override at the price the bill implies and reprices the
 * run's days (a record outside them keeps its price), and `reconcile` then matches.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { openStore } from '../../storage';
import { runCli } from '../helpers/cli';
import { gatewayRecord } from '../helpers/gateway-record';
import { useReconcileSetup } from '../helpers/reconcile-setup';

const DAY = 24 * 3600 * 1000;
const D20 = Date.UTC(2025, 10, 20);
const MODEL = 'claude-sonnet-4-5-20250929';
const TOKENS = { input: 1_000_000, cacheRead: 500_000, cacheWrite: 100_000, output: 200_000 };

describe('reconciliation: a stale price found, fixed by a dated override and a reprice', () => {
  const setup = useReconcileSetup(
    'stale-price',
    (upstreamUrl, storeUrl) =>
      `storage: { url: "${storeUrl}" }
# The stale price: 0.8 of what Anthropic bills.
pricing:
  models:
    - { provider: anthropic, model: claude-sonnet-4-5, input: "2.4", output: "12", cache_read: "0.24", cache_write: "3" }
reconcile:
  providers:
    anthropic: { admin_key: "\${ANTHROPIC_ADMIN_KEY}", base_url: "${upstreamUrl}/anthropic/v1" }
`,
    // Unpriced as stored: `usage reprice` prices them with the config's (stale) price, as the gateway would have.
    () => [
      gatewayRecord('anthropic', MODEL, D20, TOKENS, null),
      gatewayRecord('anthropic', MODEL, D20 - 10 * DAY, TOKENS, null),
    ],
  );

  const cli = (...args: string[]) =>
    runCli(['-c', setup.config, ...args], { env: { ANTHROPIC_ADMIN_KEY: 'sk-ant-admin-stale-price-test' } });
  const reconcile = (...more: string[]) =>
    cli('reconcile', '--provider', 'anthropic', '--from', '2025-11-20', '--to', '2025-11-22', ...more);

  async function records() {
    const store = await openStore(`sqlite:${setup.db}`, { writerThread: false });
    try {
      const page = await store.listRequests({ from: 0, to: D20 + DAY, filters: {}, limit: 10 });
      return page.records.map((r) => ({ ts: r.ts, cost: r.costPico, version: r.priceVersion }));
    } finally {
      await store.close();
    }
  }

  it('finds the stale price, fixes it in one step, and then matches the bill', async () => {
    const priced = await cli('usage', 'reprice');
    expect(priced.code, priced.stderr).to.equal(0);
    expect((await records()).map((r) => r.cost)).to.deep.equal([5_220_000_000_000n, 5_220_000_000_000n]);

    const found = await reconcile('--json');
    expect(found.code, found.stderr).to.equal(0);
    const report = JSON.parse(found.stdout);
    expect(report.lines.map((l: any) => [l.day, l.model, l.status, l.ratio])).to.deep.equal([
      ['2025-11-20', MODEL, 'priced_differently', '1.250000'],
    ]);

    const before = readFileSync(setup.config, 'utf8');
    const dry = await cli('reconcile-fix', String(report.run_id), '--dry-run');
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.stdout).to.include('dry run: 1 of 1 records would change; nothing was written');
    expect(readFileSync(setup.config, 'utf8')).to.equal(before);
    const dryJson = JSON.parse((await cli('reconcile-fix', String(report.run_id), '--dry-run', '--json')).stdout);
    expect(dryJson).to.include({
      run: report.run_id,
      dry_run: true,
      config: setup.config,
      scanned: 1,
      changed: 1,
      audit_id: null,
    });
    expect(dryJson.overrides).to.have.length(1);
    expect(dryJson.overrides[0]).to.include({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    expect(readFileSync(setup.config, 'utf8')).to.equal(before);

    const fixed = await cli('reconcile-fix', String(report.run_id));
    expect(fixed.code, fixed.stderr).to.equal(0);
    expect(fixed.stdout).to.match(/repriced 2025-11-20 to 2025-11-22: 1 of 1 records changed \(audit entry \d+\)/);
    const written = readFileSync(setup.config, 'utf8');
    expect(written).to.include('# The stale price: 0.8 of what Anthropic bills.');
    expect(parseYaml(written).pricing.models[1]).to.deep.equal({
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      input: '3',
      output: '15',
      cache_read: '0.3',
      cache_write: '3.75',
      effective_from: '2025-11-20',
      effective_to: '2025-11-22',
    });
    // The record of the run's days at the bill's price, with the dated price's version; the older one untouched.
    const [inside, outside] = await records();
    expect(inside.cost).to.equal(6_525_000_000_000n);
    expect(inside.version).to.match(/@2025-11-20T00:00:00\.000Z\.\.2025-11-22T00:00:00\.000Z$/);
    expect(outside.cost).to.equal(5_220_000_000_000n);
    expect(outside.version).to.not.include('@');

    const store = await openStore(`sqlite:${setup.db}`, { writerThread: false });
    try {
      const [audit] = await store.repriceLog!().list(1);
      expect(audit).to.include({
        reason: `reconciliation run ${report.run_id}: ${MODEL} billed at 1.250000 of the recorded price`,
        changed: 1,
        costBefore: '5.22',
        costAfter: '6.525',
        rangeFrom: D20,
        rangeTo: D20 + 2 * DAY,
      });
    } finally {
      await store.close();
    }

    const again = await reconcile();
    expect(again.code, again.stderr).to.equal(0);
    process.stdout.write(`\n      tollgate reconcile after the fix:\n${again.stdout.replace(/^/gm, '      ')}\n`);
    const rows = again.stdout.split('\n').filter((l) => l.startsWith('2025-'));
    expect(rows.map((r) => r.split(/\s{2,}/).slice(0, 3))).to.deep.equal([['2025-11-20', MODEL, 'match']]);
  });
});
