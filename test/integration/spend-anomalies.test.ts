/**
 * Spend anomalies end to end: real gateways in front of the test upstream, a real loopback webhook receiver, demo-like
 * traffic (two teams' keys, agents and customers as `tollgate demo` sends them) with a runaway loop injected; the
 * freeze it makes, shared through the usage store (a SQLite file, and PostgreSQL with DATABASE_URL) by a second
 * instance; lifting it through the admin API and the CLI.
 */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { parse as parseYaml } from 'yaml';
import { adminGet } from '../helpers/admin';
import { AlertReceiver } from '../helpers/alert-receiver';
import { cachedAnswerCost } from '../helpers/answer-cost';
import { runCli } from '../helpers/cli';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { scrape, total } from '../helpers/prometheus';
import { rememberSecret } from '../helpers/secret-scan';
import { requirePostgres, dropPostgresSchema } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

const SECRET = 'whsec-PLANTED-SECRET-anomaly-0017';
rememberSecret(SECRET, 'alert webhook secret');
const KEYS = {
  support: 'tg_anomaly_support_key_0000000000000001',
  platform: 'tg_anomaly_platform_key_000000000000002',
};
const ENV = { SUPPORT_KEY: KEYS.support, PLATFORM_KEY: KEYS.platform };
const ONE = cachedAnswerCost();
const usd = (p: bigint) => `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One-second windows so that a test runs in seconds. The store starts empty, so every scope's baseline is $0 and the
 * floor decides: the steady traffic spends about two answers per key and window, under the floor of six; the loop
 * spends dozens.
 */
const rules = (action: 'alert' | 'freeze') => `
    - { name: key-loop, scope: key, window_ms: 1000, baseline_ms: 4000, factor: 4, min_usd: "${usd(ONE * 6n)}", action: ${action}, freeze_ms: 600000 }
    - { name: agent-loop, scope: tag, tag: agent, window_ms: 1000, baseline_ms: 4000, factor: 4, min_usd: "${usd(ONE * 6n)}" }`;

function config(hook: AlertReceiver, action: 'alert' | 'freeze' | 'none', storage = ''): string {
  return `
budgets: { runtime_refresh_ms: 200 }
workspaces:
  - id: default
    keys:
      - { id: support, key: "\${SUPPORT_KEY}" }
      - { id: platform, key: "\${PLATFORM_KEY}" }
alerts:
  evaluate_every_ms: 100
  delivery: { timeout_ms: 1000, backoff_ms: 50, max_backoff_ms: 400, poll_ms: 50 }
  channels: [{ name: ${hook.name}, type: webhook, url: "${hook.url}", secret: "${SECRET}" }]
  anomalies: ${action === 'none' ? '[]' : rules(action)}
${storage}`;
}

const AGENTS = {
  support: ['support-bot', 'support'],
  research: ['research-agent', 'platform'],
  review: ['code-review', 'platform'],
} as const;
const CUSTOMERS = ['acme', 'globex', 'initech'];

async function chat(gw: TestGateway, agent: keyof typeof AGENTS, i: number) {
  const [name, key] = AGENTS[agent];
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-key': KEYS[key],
      authorization: `Bearer ${OPENAI_KEY}`,
      'x-gateway-metadata': JSON.stringify({ agent: name, customer_id: CUSTOMERS[i % 3], team: key }),
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, error: text.startsWith('{"error"') ? JSON.parse(text).error : undefined, res };
}

/** Demo-like steady traffic: about two requests per key and second, the agents taking turns. */
async function steady(gw: TestGateway, ms: number): Promise<number[]> {
  const statuses: number[] = [];
  const until = Date.now() + ms;
  for (let i = 0; Date.now() < until; i++) {
    const agent = (['support', 'research', 'support', 'review'] as const)[i % 4];
    statuses.push((await chat(gw, agent, i)).status);
    await sleep(250);
  }
  return statuses;
}

/** The runaway loop: research-agent on the platform key, eight at a time for about a second. */
async function loop(gw: TestGateway): Promise<number[]> {
  const statuses: number[] = [];
  for (let round = 0; round < 6; round++)
    statuses.push(
      ...(await Promise.all(Array.from({ length: 8 }, (_, i) => chat(gw, 'research', i)))).map((r) => r.status),
    );
  return statuses;
}

const anomalies = (r: AlertReceiver) => r.taken.filter((a) => a.kind === 'spend.anomaly');

describe('spend anomalies', () => {
  const upstream = new TestUpstream();
  const hook = new AlertReceiver('anomaly-webhook');
  const gateways: TestGateway[] = [];
  const start = async (yaml: string) => {
    const gw = await startTestGateway(upstream.url, yaml, ENV);
    gateways.push(gw);
    return gw;
  };
  before(async () => {
    await upstream.start();
    await hook.start();
  });
  after(async () => {
    await hook.stop();
    await upstream.stop();
  });
  beforeEach(() => (hook.received.length = 0));
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.stop();
  });

  it('a loop in demo-like traffic fires each rule once, on its scope only, and not the steady traffic before it', async () => {
    const gw = await start(config(hook, 'alert'));
    const before = await steady(gw, 4000);
    expect(before.every((s) => s === 200)).to.equal(true);
    expect(anomalies(hook), 'no alert on steady traffic').to.deep.equal([]);

    const during = await loop(gw);
    expect(
      during.every((s) => s === 200),
      'action alert never refuses',
    ).to.equal(true);
    await waitFor(() => anomalies(hook).length >= 2, 5000, 'both rules fire');
    await steady(gw, 1500); // the episode goes on, and ends: nothing is sent again
    const fired = anomalies(hook);
    expect(fired.map((a) => [a.rule, a.scope]).sort()).to.deep.equal([
      ['agent-loop', 'agent=research-agent'],
      ['key-loop', 'key_id=platform'],
    ]);
    const keyAlert = fired.find((a) => a.rule === 'key-loop');
    expect(keyAlert).to.deep.include({ workspace: 'default', kind: 'spend.anomaly' });
    expect(keyAlert.alert_id).to.match(/^[0-9a-f]{32}$/);
    expect(keyAlert.fields).to.include({ window: '1 s', action: 'alert' });
    expect(keyAlert.title).to.match(/^Spend anomaly: key_id=platform spent \$/);
    expect(Number(keyAlert.spend_usd) >= Number(usd(ONE * 6n)), `${keyAlert.spend_usd}: the floor at least`).to.equal(
      true,
    );
    const metrics = await scrape(gw.adminUrl!);
    expect(total(metrics, 'tollgate_spend_anomalies_total', { rule: 'key-loop' })).to.equal(1);
    expect(total(metrics, 'tollgate_spend_freezes_active')).to.equal(0);
    expect((await adminGet(gw, '/api/alerts')).data.filter((a: any) => a.kind === 'spend.anomaly')).to.have.length(2);
  });

  it('freeze: the looping key gets 429 spend_anomaly_frozen, the other key goes on; lifting lets it through', async () => {
    const gw = await start(config(hook, 'freeze'));
    await steady(gw, 3000);
    await loop(gw);
    await waitFor(async () => (await chat(gw, 'review', 0)).status === 429, 5000, 'the platform key is frozen');
    const refused = await chat(gw, 'research', 1);
    expect(refused.status).to.equal(429);
    expect(refused.error).to.include({ code: 'spend_anomaly_frozen', type: 'rate_limit_error' });
    expect(refused.error.message).to.include('key_id=platform').and.to.include('tollgate freezes lift frz_');
    expect(Number(refused.res.headers['retry-after'])).to.be.within(500, 600);
    expect((await chat(gw, 'support', 2)).status, 'another key is not frozen').to.equal(200);

    const [freeze] = (await adminGet(gw, '/api/freezes')).data;
    expect(freeze).to.include({ workspace: 'default', scope: 'key_id=platform', state: 'active' });
    await waitFor(() => anomalies(hook).some((a) => a.rule === 'key-loop'), 5000, 'the freeze alert');
    const alert = anomalies(hook).find((a) => a.rule === 'key-loop');
    expect(alert.fields).to.include({ action: 'freeze', freeze_id: freeze.id });
    expect(total(await scrape(gw.adminUrl!), 'tollgate_spend_freezes_active')).to.equal(1);

    const lifted = await request(`${gw.adminUrl}/api/freezes/${freeze.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    expect(((await lifted.body.json()) as any).state).to.equal('lifted');
    expect((await chat(gw, 'research', 3)).status, 'served at once after the lift').to.equal(200);
    expect(total(await scrape(gw.adminUrl!), 'tollgate_spend_freezes_active')).to.equal(0);
  });

  const sharedStore = (storage: () => string) => async () => {
    const a = await start(config(hook, 'freeze', storage()));
    const b = await start(config(hook, 'none', storage()));
    await steady(a, 3000);
    await loop(a);
    await waitFor(async () => (await chat(a, 'research', 0)).status === 429, 5000, 'frozen on instance a');
    // Instance b has no rule and never saw the loop: it reads the freeze from the shared store.
    await waitFor(async () => (await chat(b, 'review', 0)).status === 429, 3000, 'frozen on instance b');
    expect((await chat(b, 'support', 0)).status).to.equal(200);
    const [freeze] = (await adminGet(b, '/api/freezes')).data;

    // The CLI lifts it in the store; both instances serve the key again within their refresh.
    const dir = a.dataDir;
    const yamlPath = join(dir, 'cli.yaml');
    writeFileSync(yamlPath, `storage: ${JSON.stringify(parseYaml(storage()).storage)}\n`);
    const listed = await runCli(['freezes', 'list', '--config', yamlPath]);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.include(freeze.id).and.to.include('key_id=platform');
    const lift = await runCli(['freezes', 'lift', freeze.id, '--json', '--config', yamlPath]);
    expect(lift.code, lift.stderr).to.equal(0);
    expect(JSON.parse(lift.stdout)).to.include({ id: freeze.id, state: 'lifted' });
    await waitFor(async () => (await chat(a, 'research', 1)).status === 200, 3000, 'served again on a');
    await waitFor(async () => (await chat(b, 'research', 1)).status === 200, 3000, 'served again on b');
    const all = await runCli(['freezes', 'list', '--all', '--json', '--config', yamlPath]);
    expect(JSON.parse(all.stdout).map((f: any) => [f.id, f.state])).to.deep.equal([[freeze.id, 'lifted']]);
  };

  let sqliteFile = '';
  it('a freeze made on one instance applies on a second sharing the SQLite file; the CLI lifts it on both', async function () {
    const first = await startTestGateway(upstream.url, '', ENV); // makes the shared file, then steps aside
    sqliteFile = join(first.dataDir, 'tollgate.db');
    await first.stop();
    await sharedStore(() => `storage: { url: "sqlite:${sqliteFile}" }`).call(this);
  });

  describe('two instances sharing PostgreSQL (DATABASE_URL)', () => {
    const schema = `tg_anomaly_${process.pid}_${Date.now().toString(36)}`;
    let pg: string;
    before(async function () {
      pg = await requirePostgres(this, 'spend freezes: two instances on PostgreSQL');
    });
    after(() => dropPostgresSchema(schema));
    it('a freeze made on one instance applies on the other; the CLI lifts it on both', async function () {
      await sharedStore(() => `storage: { url: "${pg}", schema: ${schema} }`).call(this);
    });
  });
});
