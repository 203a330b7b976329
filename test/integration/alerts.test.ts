/**
 * Budget alerts end to end: real gateways, real loopback receivers (a webhook that checks the HMAC, one that checks
 * Slack's payload shape), SQLite and (with DATABASE_URL) PostgreSQL shared by two instances.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminGet } from '../helpers/admin';
import { runCli } from '../helpers/cli';
import { scrape, total } from '../helpers/prometheus';
import { AlertReceiver, slackShapeProblems } from '../helpers/alert-receiver';
import { cachedAnswerCost } from '../helpers/answer-cost';
import { OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { rememberSecret } from '../helpers/secret-scan';
import { requirePostgres, requireRedis, dropPostgresSchema } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';
import { waitFor, sleep } from '../helpers/wait';

const SECRET = 'whsec-PLANTED-SECRET-alerts-0004';
rememberSecret(SECRET, 'alert webhook secret');

// The cost of one answer of the test upstream, by hand from the catalog.
const ONE = cachedAnswerCost();
const usd = (p: bigint) => `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`;

/** A soft daily budget of four answers: 0.5 after the 2nd, 0.8 and 1.0 after the 4th. */
const SOFT_BUDGET = `{ budgets: [{ period: day, usd: "${usd(ONE * 4n)}", action: alert }] }`;

function config(limits: string, channels: string, extra = ''): string {
  return `
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: ${limits}
alerts:
  evaluate_every_ms: 100
  dashboard_url: "https://tollgate.example.com:8081/"
  delivery: { timeout_ms: 1000, backoff_ms: 50, max_backoff_ms: 400, poll_ms: 50 }
  forecast: { window_ms: 60000, min_elapsed_ms: 600000 }
  channels: ${channels}
${extra}`;
}
const webhook = (r: AlertReceiver) => `{ name: ${r.name}, type: webhook, url: "${r.url}", secret: "${SECRET}" }`;
const slack = (r: AlertReceiver) => `{ name: ${r.name}, type: slack, url: "${r.url}" }`;

async function chat(gw: TestGateway): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, authorization: `Bearer ${OPENAI_KEY}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }),
  });
  await res.body.text();
  return { status: res.statusCode, ms: performance.now() - t0 };
}

const thresholds = (r: AlertReceiver) => r.taken.filter((a) => a.kind === 'budget.threshold').map((a) => a.threshold);
const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1];

describe('budget alerts', () => {
  const upstream = new TestUpstream();
  const hook = new AlertReceiver('ops-webhook');
  const slackHook = new AlertReceiver('team-slack', true);
  const gateways: TestGateway[] = [];
  const start = async (yaml: string) => {
    const gw = await startTestGateway(upstream.url, yaml);
    gateways.push(gw);
    return gw;
  };

  before(async () => {
    await upstream.start();
    await hook.start();
    await slackHook.start();
  });
  after(async () => {
    await hook.stop();
    await slackHook.stop();
    await upstream.stop();
  });
  beforeEach(() => {
    hook.received.length = 0;
    slackHook.received.length = 0;
    hook.mode = { kind: 'ok' };
    slackHook.mode = { kind: 'ok' };
  });
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.stop();
  });

  it('a soft budget never refuses; each threshold reaches the webhook (HMAC-signed) and Slack once', async () => {
    const gw = await start(config(SOFT_BUDGET, `[${webhook(hook)}, ${slack(slackHook)}]`));
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await chat(gw)).status);
    expect(statuses, 'twice the limit spent, never refused').to.deep.equal(Array(8).fill(200));
    await waitFor(() => thresholds(hook).length >= 3 && slackHook.taken.length >= 3, 10_000, 'three alerts each');
    await sleep(1000); // ten more evaluations: nothing is sent again
    expect(thresholds(hook)).to.deep.equal([0.5, 0.8, 1]);
    expect(slackHook.taken).to.have.length(3);

    for (const r of hook.received) {
      const expected = `sha256=${createHmac('sha256', SECRET).update(r.body).digest('hex')}`;
      expect(r.headers['x-tollgate-signature']).to.equal(expected);
      expect(Math.abs(Number(r.headers['x-tollgate-timestamp']) - Date.now() / 1000)).to.be.below(60);
      expect(r.headers['x-tollgate-alert-id']).to.equal(r.json.alert_id);
    }
    const full = hook.taken.find((a) => a.threshold === 1);
    expect(full).to.deep.include({
      kind: 'budget.threshold',
      workspace: 'default',
      scope: 'workspace',
      rule: 'alert_at 1',
    });
    expect(full.budget).to.deep.include({
      scope: 'workspace',
      period: 'day',
      limit_usd: trimUsd(ONE * 4n),
      action: 'alert',
    });
    expect(toPico(full.spend_usd) >= ONE * 4n, 'the spend reached the limit').to.equal(true);
    expect(full.dashboard_url).to.equal('https://tollgate.example.com:8081/#/usage');
    expect(full.alert_id).to.match(/^[0-9a-f]{32}$/);
    expect(full.summary).to.include('soft budget');

    for (const m of slackHook.received.map((r) => r.json)) expect(slackShapeProblems(m)).to.deep.equal([]);
    expect(slackHook.taken[2].text)
      .to.include('Budget 100% used')
      .and.include('daily budget of workspace default')
      .and.include('<https://tollgate.example.com:8081/#/usage|Open the dashboard>');
    console.log(
      `      a Slack message as sent:\n${JSON.stringify(slackHook.taken[2], null, 2).replace(/^/gm, '      ')}`,
    );

    const history = await adminGet(gw, '/api/alerts');
    expect(history.data).to.have.length(6);
    expect(history.data.every((a: any) => a.state === 'sent' && a.attempts === 1)).to.equal(true);
    const budgets = (await adminGet(gw, '/api/budgets')).data;
    expect(budgets[0]).to.deep.include({ action: 'alert', alert_at: [0.5, 0.8, 1] });
    const metrics = await scrape(gw.adminUrl!);
    for (const channel of ['ops-webhook', 'team-slack']) {
      expect(total(metrics, 'tollgate_alerts_sent_total', { channel }), channel).to.equal(3);
      expect(total(metrics, 'tollgate_alerts_failed_total', { channel }), channel).to.equal(0);
    }
  });

  it('a soft budget never refuses on the Redis limit store either (REDIS_URL)', async function () {
    const redis = await requireRedis(this, 'budget alerts: a soft budget on Redis');
    const prefix = `tg-alerts-${process.pid}-${Date.now().toString(36)}:`;
    const gw = await start(
      config(SOFT_BUDGET, `[${webhook(hook)}]`, `limit_store: { redis_url: "${redis}", key_prefix: "${prefix}" }`),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await chat(gw)).status);
    expect(statuses).to.deep.equal(Array(8).fill(200));
    await waitFor(() => thresholds(hook).length >= 3, 10_000, 'three alerts');
    expect(thresholds(hook)).to.deep.equal([0.5, 0.8, 1]);
  });

  it('a blocking budget refuses past its limit and still alerts at 100%', async () => {
    const gw = await start(config(`{ budgets: [{ period: day, usd: "${usd(ONE * 2n)}" }] }`, `[${webhook(hook)}]`));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await chat(gw)).status);
    expect(statuses).to.include(429);
    await waitFor(() => thresholds(hook).includes(1), 10_000, 'the 100% alert');
    expect(thresholds(hook)).to.deep.equal([0.5, 0.8, 1]);
  });

  it('a receiver that is down, then up, gets every alert afterwards, in order, once, also across a restart (Retry-After honoured)', async () => {
    hook.mode = { kind: 'fail', status: 503, retryAfter: '1' };
    const first = await start(config(SOFT_BUDGET, `[${webhook(hook)}]`));
    for (let i = 0; i < 2; i++) expect((await chat(first)).status).to.equal(200);
    await waitFor(() => hook.received.length >= 3, 10_000, 'three failed attempts');
    const gaps = hook.received.slice(1).map((r, i) => r.at - hook.received[i].at);
    expect(Math.min(...gaps), 'attempts wait out Retry-After: 1').to.be.at.least(900);
    const pending = (await adminGet(first, '/api/alerts')).data;
    expect(pending).to.have.length(1);
    expect(pending[0]).to.deep.include({ state: 'pending', last_error: 'HTTP 503' });
    const failed = total(await scrape(first.adminUrl!), 'tollgate_alerts_failed_total', { channel: 'ops-webhook' });
    expect(failed).to.be.at.least(3);
    const storage = `${first.dataDir}/tollgate.db`;
    await first.stop();
    gateways.splice(0);

    await hook.stop(); // down while nothing runs, then up
    hook.received.length = 0;
    hook.mode = { kind: 'ok' };
    await hook.start();
    const second = await start(config(SOFT_BUDGET, `[${webhook(hook)}]`, `storage: { url: "sqlite:${storage}" }`));
    await waitFor(() => hook.taken.length >= 1, 10_000, 'the alert kept in the store');
    for (let i = 0; i < 3; i++) expect((await chat(second)).status).to.equal(200);
    await waitFor(() => thresholds(hook).length >= 3, 10_000, 'every threshold');
    await sleep(1000);
    expect(thresholds(hook), 'in order, once: 50% from before the restart first').to.deep.equal([0.5, 0.8, 1]);
    expect(new Set(hook.taken.map((a) => a.alert_id)).size).to.equal(hook.taken.length);

    // The CLI reads the same history from the store, and sends a test alert through the configured channel.
    const file = join(second.dataDir, 'cli.config.yaml');
    writeFileSync(file, `storage: { url: "sqlite:${storage}" }\nalerts: { channels: [${webhook(hook)}] }\n`);
    const listed = await runCli(['-c', file, 'alerts', 'list', '--json']);
    expect(listed.code, listed.stderr).to.equal(0);
    const rows = JSON.parse(listed.stdout);
    expect(rows.map((r: any) => [r.state, r.body.threshold])).to.deep.equal([
      ['sent', 1],
      ['sent', 0.8],
      ['sent', 0.5],
    ]);
    const tested = await runCli(['-c', file, 'alerts', 'test', 'ops-webhook']);
    expect(tested.stdout).to.match(/^Test alert [0-9a-f]{32} delivered to ops-webhook \(webhook, HTTP 200\)\n$/);
    expect(hook.taken.at(-1).kind).to.equal('test');
    const json = await runCli(['-c', file, 'alerts', 'test', 'ops-webhook', '--json']);
    expect(JSON.parse(json.stdout)).to.deep.equal({
      alert_id: hook.taken.at(-1).alert_id,
      channel: 'ops-webhook',
      type: 'webhook',
      delivered: true,
      status: 200,
    });
    const unknown = await runCli(['-c', file, 'alerts', 'test', 'nope']);
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.include('no alert channel named nope; configured: ops-webhook');
  });

  it('a receiver that hangs or answers 500 never holds up proxied requests', async () => {
    const measure = async (gw: TestGateway, n: number) => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = await chat(gw);
        expect(r.status).to.equal(200);
        ms.push(r.ms);
      }
      return ms;
    };
    const quiet = await start(config(SOFT_BUDGET, '[]'));
    await measure(quiet, 20); // warm-up
    const without = await measure(quiet, 200);
    await quiet.stop();
    gateways.splice(0);

    hook.mode = { kind: 'hang' };
    slackHook.mode = { kind: 'fail', status: 500 };
    const gw = await start(config(SOFT_BUDGET, `[${webhook(hook)}, ${slack(slackHook)}]`));
    await measure(gw, 20);
    await waitFor(() => hook.received.length >= 1, 10_000, 'a hung delivery');
    const hanging = await measure(gw, 200);
    expect(hook.taken, 'the hanging receiver took nothing').to.deep.equal([]);
    // The hung attempt timed out and was tried again, while requests were answered.
    await waitFor(() => hook.received.length >= 2, 10_000, 'a retry after the time-out');
    console.log(
      `      proxy p99 over 200 sequential requests: ${p99(without).toFixed(1)} ms with no channel, ${p99(hanging).toFixed(1)} ms while one receiver hangs and one answers 500`,
    );
  });

  it('a forecast alert fires once on a steady burn, and GET /api/budgets shows the forecast', async () => {
    const limit = ONE * 400n;
    const gw = await start(
      config(`{ budgets: [{ period: month, usd: "${usd(limit)}", alert_at: 0.99 }] }`, `[${webhook(hook)}]`).replace(
        'forecast: { window_ms: 60000, min_elapsed_ms: 600000 }',
        'forecast: { window_ms: 2000, min_elapsed_ms: 1000 }',
      ),
    );
    await sleep(1500); // watched, no spend: no forecast alert
    expect(hook.taken).to.deep.equal([]);
    const until = Date.now() + 2500;
    while (Date.now() < until) {
      expect((await chat(gw)).status).to.equal(200);
      await sleep(100);
    }
    await waitFor(() => hook.taken.some((a) => a.kind === 'budget.forecast'), 10_000, 'the forecast alert');
    await sleep(1000);
    const forecasts = hook.taken.filter((a) => a.kind === 'budget.forecast');
    expect(forecasts).to.have.length(1);
    const [f] = forecasts;
    expect(f.rule).to.equal('forecast');
    expect(toPico(f.forecast.projected_usd) > limit, 'projected over the limit').to.equal(true);
    expect(toPico(f.spend_usd) < limit, 'not reached yet').to.equal(true);
    expect(Date.parse(f.forecast.limit_reached_at)).to.be.below(Date.parse(f.budget.period_end));
    const [b] = (await adminGet(gw, '/api/budgets')).data;
    expect(toPico(b.forecast.projected_usd) > limit, 'GET /api/budgets forecast').to.equal(true);
  });

  it('POST /api/alerts/test sends a test alert to the channel named, and refuses an unknown one', async () => {
    const gw = await start(config(SOFT_BUDGET, `[${webhook(hook)}, ${slack(slackHook)}]`));
    const post = (body: object) =>
      request(`${gw.adminUrl}/api/alerts/test`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ok = await post({ channel: 'team-slack' });
    const answer = (await ok.body.json()) as any;
    expect(ok.statusCode).to.equal(200);
    expect(answer).to.deep.include({ channel: 'team-slack', delivered: true, status: 200 });
    expect(slackHook.taken).to.have.length(1);
    expect(slackHook.taken[0].text).to.include('Tollgate test alert');
    const bad = await post({ channel: 'nope' });
    expect(bad.statusCode).to.equal(400);
    expect(((await bad.body.json()) as any).error.message).to.equal(
      'channel must name a configured alert channel: ops-webhook, team-slack',
    );
  });

  describe('two instances sharing PostgreSQL (DATABASE_URL)', () => {
    const schema = `tg_alerts_${process.pid}_${Date.now().toString(36)}`;
    let pg: string;
    before(async function () {
      pg = await requirePostgres(this, 'budget alerts: two instances on PostgreSQL');
    });
    after(() => dropPostgresSchema(schema));

    it('each threshold is sent once, not once per instance', async () => {
      const yaml = config(SOFT_BUDGET, `[${webhook(hook)}]`, `storage: { url: "${pg}", schema: ${schema} }`);
      const a = await start(yaml);
      const b = await start(yaml);
      for (let i = 0; i < 12; i++) expect((await chat(i % 2 ? b : a)).status).to.equal(200);
      // Without Redis each instance counts its own spend (on top of what the store held when it first met the
      // budget): six answers each take both past every threshold, so both raise each alert.
      await waitFor(() => thresholds(hook).length >= 3, 15_000, 'three thresholds');
      await sleep(1500);
      expect(thresholds(hook)).to.deep.equal([0.5, 0.8, 1]);
      expect((await adminGet(b, '/api/alerts')).data).to.have.length(3);
      for (const gw of [a, b]) {
        const [budget] = (await adminGet(gw, '/api/budgets')).data;
        expect(toPico(budget.spent_usd) >= ONE * 4n, 'each instance is past every threshold').to.equal(true);
      }
    });
  });
});

function trimUsd(p: bigint): string {
  return usd(p).replace(/0+$/, '').replace(/\.$/, '');
}

function toPico(v: string): bigint {
  const [w, f = ''] = v.split('.');
  return BigInt(w) * 10n ** 12n + BigInt(f.padEnd(12, '0'));
}
