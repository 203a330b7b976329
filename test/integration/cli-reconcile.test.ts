/**
 * `tollgate reconcile` as a user runs it: the built CLI, a config file, a SQLite store holding the gateway's records,
 * and a loopback server answering like OpenAI's admin API. The admin key comes from the environment and appears in
 * no output; a day drifting past reconcile.drift_alert leaves an alert in the outbox.
 */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseUsd } from '../../pricing/money';
import { openStore } from '../../storage';
import { runCli } from '../helpers/cli';
import { gatewayRecord } from '../helpers/gateway-record';
import { useReconcileSetup } from '../helpers/reconcile-setup';

const DAY = 24 * 3600 * 1000;
const D20 = Date.UTC(2025, 10, 20);
const D25 = D20 + 5 * DAY;
const ADMIN_KEY = 'sk-admin-cli-reconcile-0123456789abcdef';
const MODEL = 'gpt-4o-mini-2024-07-18';

describe('tollgate reconcile', () => {
  const setup = useReconcileSetup(
    'cli-reconcile',
    (upstreamUrl, storeUrl) =>
      `storage: { url: "${storeUrl}" }
alerts:
  channels: [{ name: ops, type: webhook, url: "http://127.0.0.1:1/hook", secret: "reconcile-test-secret-0123" }]
reconcile:
  providers:
    openai: { base_url: "${upstreamUrl}/openai/v1" }
`,
    // Day 21 is half of what OpenAI billed: the other half went around the gateway. Day 25 is priced at a
    // negotiated discount (pricing.discounts) of 0.24: $0.76 of a list cost of $1.
    () => [
      gatewayRecord('openai', MODEL, D20, { input: 1_000_000, cacheRead: 200_000, output: 300_000 }, '0.345'),
      gatewayRecord('openai', MODEL, D20 + DAY, { input: 1_000_000, output: 250_000 }, '0.3'),
      {
        ...gatewayRecord('openai', MODEL, D25, { input: 4_000_000, output: 400_000 }, '0.76'),
        listCostPico: parseUsd('1'),
      },
    ],
  );
  const { upstream } = setup;

  const reconcile = (...args: string[]) =>
    runCli(
      ['-c', setup.config, 'reconcile', '--provider', 'openai', '--from', '2025-11-20', '--to', '2025-11-22', ...args],
      {
        env: { OPENAI_ADMIN_KEY: ADMIN_KEY },
      },
    );

  it('prints each day x model with its status and the totals, and stores the run', async () => {
    const run = await reconcile();
    expect(run.stderr).to.include('alert: openai bill differs from recorded spend by 50.00% on 2025-11-21');
    expect(run.code, run.stderr).to.equal(0);
    const rows = run.stdout.split('\n').filter((l) => l.startsWith('2025-'));
    expect(run.stdout).to.not.include('list cost');
    expect(rows.map((r) => r.split(/\s{2,}/))).to.deep.equal([
      ['2025-11-20', MODEL, 'match', '$0.345', '$0.345', '0', '1.000000'],
      ['2025-11-21', MODEL, 'not_seen_by_gateway', '$0.3', '$0.6', '0.3', '2.000000'],
    ]);
    expect(run.stdout).to.include('provider $0.945, gateway $0.645, difference 0.3');
    expect(run.stdout + run.stderr).to.not.include(ADMIN_KEY);
    expect(upstream.received.every((r) => r.headers.authorization === `Bearer ${ADMIN_KEY}`)).to.equal(true);

    const store = await openStore(`sqlite:${setup.db}`, { writerThread: false });
    try {
      const [stored] = await store.reconciliationRuns!().list(1, null);
      expect(stored).to.include({ provider: 'openai', status: 'ok', source: 'api' });
      const [alert] = await store.alertOutbox!().list(1, null);
      expect(alert).to.include({ kind: 'reconciliation.drift', channel: 'ops' });
      expect(JSON.parse(alert.body).fields).to.deep.equal({ provider: 'openai', day: '2025-11-21', drift: '0.500000' });
    } finally {
      await store.close();
    }
  });

  it('shows the list cost beside the gateway cost when a negotiated discount priced a line below it', async () => {
    const run = await runCli(
      ['-c', setup.config, 'reconcile', '--provider', 'openai', '--from', '2025-11-25', '--to', '2025-11-26'],
      { env: { OPENAI_ADMIN_KEY: ADMIN_KEY } },
    );
    expect(run.code, run.stderr).to.equal(0);
    const lines = run.stdout.split('\n');
    expect(lines[0].split(/\s+/)).to.deep.equal([
      'day',
      'model',
      'scope',
      'status',
      'gateway',
      'list',
      'cost',
      'provider',
      'difference',
      'ratio',
    ]);
    const row = lines.find((l) => l.startsWith('2025-11-25'))!;
    expect(row.split(/\s{2,}/).slice(0, 5)).to.deep.equal(['2025-11-25', MODEL, 'gateway_only', '$0.76', '$1']);
    expect(run.stdout).to.include('gateway $0.76 ($1 at list price)');
  });

  it('reads a console CSV export instead of the API', async () => {
    const csv = join(setup.dir, 'export.csv');
    writeFileSync(
      csv,
      `Date,Model,Input Tokens,Cache Read Tokens,Output Tokens,Cost (USD)\n2025-11-20,${MODEL},1000000,200000,300000,0.345\n2025-11-21,${MODEL},1000000,0,250000,0.30\n`,
    );
    const run = await reconcile('--csv', csv, '--json');
    expect(run.code, run.stderr).to.equal(0);
    const report = JSON.parse(run.stdout);
    expect(report.lines.map((l: { status: string }) => l.status)).to.deep.equal(['match', 'match']);
    expect(report.totals.drift).to.equal('0.000000');
  });

  it('migrates a store no gateway has opened yet, and stores the run there', async () => {
    const fresh = join(setup.dir, 'fresh.yaml');
    writeFileSync(
      fresh,
      `storage: { url: "sqlite:${join(setup.dir, 'fresh.db')}" }\nreconcile: { providers: { openai: { base_url: "${upstream.url}/openai/v1" } } }\n`,
    );
    const run = await runCli(
      ['-c', fresh, 'reconcile', '--provider', 'openai', '--from', '2025-11-20', '--to', '2025-11-22', '--json'],
      { env: { OPENAI_ADMIN_KEY: ADMIN_KEY } },
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout).lines.map((l: { status: string }) => l.status)).to.deep.equal([
      'provider_only',
      'provider_only',
    ]);
    const store = await openStore(`sqlite:${join(setup.dir, 'fresh.db')}`, { writerThread: false });
    try {
      expect(await store.reconciliationRuns!().list(5, null)).to.have.length(1);
    } finally {
      await store.close();
    }
  });

  it('says what to set when there is no admin key', async () => {
    const run = await runCli(['-c', setup.config, 'reconcile', '--provider', 'anthropic'], {
      env: { ANTHROPIC_ADMIN_KEY: '' },
    });
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include(
      'no admin key for anthropic: set reconcile.providers.anthropic.admin_key to an ${ENV} reference, or ANTHROPIC_ADMIN_KEY',
    );
  });
});
