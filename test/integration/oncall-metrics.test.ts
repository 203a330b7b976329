import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import OpenAI from 'openai';
import { request } from 'undici';
import { parse as parseYaml } from 'yaml';
import { fixtureBytes, fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import { OPENAI_KEY, TEST_ADMIN_TOKEN, useGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { samplesOf, scrape, total, type Sample } from '../helpers/prometheus';
import { rememberSecret } from '../helpers/secret-scan';
import { requireRedis } from '../helpers/services';
import { recordedResponder, TestUpstream } from '../helpers/upstream';

const LIMITED_KEY = 'tg_test_key_for_the_limited_workspace_00000001';
const EXTRA_KEY = 'tg_test_key_for_the_extra_workspace_000000001';

const sha256 = (key: string) => createHash('sha256').update(key).digest('hex');

/** The change of a metric between two scrapes, over the samples whose labels include `match`. */
const delta = (before: Sample[], after: Sample[], name: string, match: Record<string, string> = {}) =>
  total(after, name, match) - total(before, name, match);

/** The value of a gauge without labels. */
const gauge = (samples: Sample[], name: string) => {
  const found = samplesOf(samples, name);
  expect(found, name).to.have.length(1);
  return found[0].value;
};

describe('on-call metrics: what an engineer reads on /metrics during an incident', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(
    upstream,
    (g) => (gw = g),
    `
metrics: { workspaces_max: 2 }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
  - id: limited
    keys: [{ id: lim, sha256: ${sha256(LIMITED_KEY)} }]
    limits: { requests_per_minute: 1 }
  - id: extra
    keys: [{ id: ext, sha256: ${sha256(EXTRA_KEY)} }]
`,
  );

  const openai = (key = gw.key) =>
    new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': key },
    });
  const chat = (key?: string) =>
    openai(key).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

  it('a request lands in the duration histogram of its provider, endpoint and workspace, upstream time included', async () => {
    upstream.respondWith((req, body) => {
      const reply = recordedResponder(req, body);
      return reply && { ...reply, headerDelayMs: 60 };
    });
    const before = await scrape(gw.adminUrl!);
    await chat();
    await chat();
    const after = await scrape(gw.adminUrl!);
    const series = { provider: 'openai', endpoint: 'chat.completions', workspace: 'default' };
    expect(delta(before, after, 'tollgate_request_duration_seconds_count', series)).to.equal(2);
    const sum = delta(before, after, 'tollgate_request_duration_seconds_sum', series);
    expect(sum).to.be.within(0.12, 5);
    // Nothing under 50 ms: both waited 60 ms for the provider. Buckets are cumulative; +Inf holds them all.
    expect(delta(before, after, 'tollgate_request_duration_seconds_bucket', { ...series, le: '0.05' })).to.equal(0);
    expect(delta(before, after, 'tollgate_request_duration_seconds_bucket', { ...series, le: '+Inf' })).to.equal(2);
    expect(delta(before, after, 'tollgate_requests_total', { ...series, status_class: '2xx' })).to.equal(2);
    expect(
      delta(before, after, 'tollgate_upstream_responses_total', { provider: 'openai', upstream_status: '200' }),
    ).to.equal(2);

    // The GenAI conventions' own metrics, as a dashboard made for them queries them: input counts cached tokens too.
    const { usage } = fixtureJson('openai/chat_completion_cached_tokens.json');
    const genAi = {
      gen_ai_operation_name: 'chat',
      gen_ai_provider_name: 'openai',
      gen_ai_system: 'openai',
      gen_ai_request_model: 'gpt-4o-mini',
    };
    const tokens = (type: string, part: string) =>
      delta(before, after, `gen_ai_client_token_usage_${part}`, { ...genAi, gen_ai_token_type: type });
    expect([tokens('input', 'count'), tokens('input', 'sum')]).to.deep.equal([2, 2 * usage.prompt_tokens]);
    expect([tokens('output', 'count'), tokens('output', 'sum')]).to.deep.equal([2, 2 * usage.completion_tokens]);
    const duration = { ...genAi, error_type: '' };
    expect(delta(before, after, 'gen_ai_client_operation_duration_seconds_count', duration)).to.equal(2);
    expect(delta(before, after, 'gen_ai_client_operation_duration_seconds_sum', duration)).to.be.within(0.12, 5);
  });

  it('an open stream shows in streams_open and in_flight while it runs, then in the stream histogram', async () => {
    upstream.respondWith((req, body) => {
      const reply = recordedResponder(req, body);
      return reply && { ...reply, delayMs: 150 };
    });
    const before = await scrape(gw.adminUrl!);
    expect(gauge(before, 'tollgate_streams_open')).to.equal(0);
    const stream = await openai().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const events = stream[Symbol.asyncIterator]();
    await events.next();
    const during = await scrape(gw.adminUrl!);
    expect(gauge(during, 'tollgate_streams_open')).to.equal(1);
    expect(gauge(during, 'tollgate_requests_in_flight')).to.equal(1);
    while (!(await events.next()).done);
    const series = { provider: 'openai', endpoint: 'chat.completions', workspace: 'default' };
    let after = await scrape(gw.adminUrl!);
    for (let i = 0; i < 50 && gauge(after, 'tollgate_requests_in_flight') !== 0; i++)
      after = await scrape(gw.adminUrl!);
    expect(gauge(after, 'tollgate_streams_open')).to.equal(0);
    expect(gauge(after, 'tollgate_requests_in_flight')).to.equal(0);
    expect(delta(before, after, 'tollgate_stream_duration_seconds_count', series)).to.equal(1);
    expect(delta(before, after, 'tollgate_stream_duration_seconds_sum', series)).to.be.above(0.15);
    expect(delta(before, after, 'tollgate_request_duration_seconds_count', series)).to.equal(0);
  });

  it("the provider's own status code is kept: a recorded 404 from OpenAI is upstream_status 404", async () => {
    upstream.respondWith(() => ({
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/error_404_model_not_found.json'),
    }));
    const before = await scrape(gw.adminUrl!);
    const err = await chat().catch((e: unknown) => e);
    expect(err).to.be.instanceOf(OpenAI.NotFoundError);
    const after = await scrape(gw.adminUrl!);
    expect(
      delta(before, after, 'tollgate_upstream_responses_total', { provider: 'openai', upstream_status: '404' }),
    ).to.equal(1);
    expect(delta(before, after, 'tollgate_requests_total', { workspace: 'default', status_class: '4xx' })).to.equal(1);
    const failed = { gen_ai_provider_name: 'openai', error_type: '404' };
    expect(delta(before, after, 'gen_ai_client_operation_duration_seconds_count', failed)).to.equal(1);
  });

  it('refusals and errors name their workspace; a workspace beyond workspaces_max is "other"', async () => {
    const before = await scrape(gw.adminUrl!);
    await chat(LIMITED_KEY);
    const refused = await chat(LIMITED_KEY).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(OpenAI.RateLimitError);
    await chat(EXTRA_KEY);
    const after = await scrape(gw.adminUrl!);
    const limited = { code: 'rate_limited', workspace: 'limited' };
    expect(delta(before, after, 'tollgate_limit_refusals_total', limited)).to.equal(1);
    expect(delta(before, after, 'tollgate_errors_total', limited)).to.equal(1);
    expect(delta(before, after, 'tollgate_requests_total', { workspace: 'limited', status_class: '4xx' })).to.equal(1);
    // default and limited took the two labels; extra is counted, under "other"
    expect(delta(before, after, 'tollgate_requests_total', { workspace: 'other', status_class: '2xx' })).to.equal(1);
    expect(samplesOf(after, 'tollgate_requests_total', { workspace: 'extra' })).to.have.length(0);
    expect(delta(before, after, 'tollgate_request_duration_seconds_count', { workspace: 'other' })).to.equal(1);
  });
});

const WEBHOOK_SECRET = 'whsec-PLANTED-SECRET-oncall-0005';
rememberSecret(WEBHOOK_SECRET, 'alert webhook secret');

/** PromQL words that are not metric names: functions, aggregations, operators and modifiers. */
const PROMQL_WORDS = new Set(
  'sum min max avg count rate increase irate histogram_quantile and or unless bool by without on ignoring group_left group_right offset humanize1024'.split(
    ' ',
  ),
);
/** Series Prometheus itself makes (a scrape's own `up`), not the gateway. */
const PROMETHEUS_SERIES = new Set(['up']);

/** The metric names a PromQL expression reads: label matchers, strings, ranges, groupings and numbers left out. */
function metricsNamedIn(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/"[^"]*"/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((w) => !PROMQL_WORDS.has(w) && !PROMETHEUS_SERIES.has(w));
}

/** Every series name the exposition text declares: # TYPE lines, with a histogram's _bucket, _sum and _count. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

describe('the alert rules and Grafana dashboard in docs/ name only metrics the gateway exports', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  let redisUrl: string;
  before(async function () {
    redisUrl = await requireRedis(this, 'alert rules checked against a gateway with every store');
  });
  useGateway(
    upstream,
    (g) => (gw = g),
    () => `
limit_store: { redis_url: "${redisUrl}", key_prefix: "tollgate-test:${process.pid}:${Date.now()}:oncall:" }
alerts: { channels: [{ name: ops, type: webhook, url: "http://127.0.0.1:9/none", secret: "${WEBHOOK_SECRET}" }] }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: { budgets: [{ period: day, usd: "5" }] }
`,
  );

  it('every expression of docs/prometheus-alerts.yml and docs/grafana-dashboard.json reads exported metrics', async () => {
    const client = openaiClient(gw);
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const res = await request(`${gw.adminUrl}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    const exported = exportedNames(await res.body.text());

    const rules = parseYaml(readFileSync(join(PROJECT_ROOT, 'docs/prometheus-alerts.yml'), 'utf8'));
    const alertExprs: string[] = rules.groups.flatMap((g: any) => g.rules.map((r: any) => r.expr));
    const dashboard = JSON.parse(readFileSync(join(PROJECT_ROOT, 'docs/grafana-dashboard.json'), 'utf8'));
    const panelExprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
    expect(alertExprs.length).to.be.above(10);
    expect(panelExprs.length).to.be.above(20);

    const named = new Set([...alertExprs, ...panelExprs].flatMap(metricsNamedIn));
    // The rules cover what the on-call needs: errors, latency, budgets, the store's queue and spill.
    for (const needed of [
      'tollgate_requests_total',
      'tollgate_request_duration_seconds_bucket',
      'tollgate_budget_spent_usd',
      'tollgate_budget_forecast_usd',
      'tollgate_store_queue_depth',
      'tollgate_store_spill_bytes',
    ])
      expect(alertExprs.flatMap(metricsNamedIn), 'the alert rules').to.include(needed);
    expect(
      [...named].filter((name) => !exported.has(name)),
      'named but not exported',
    ).to.deep.equal([]);
    // The dashboard's workspace variable lists the workspaces of the request counter.
    const variable = dashboard.templating.list.find((v: any) => v.name === 'workspace');
    expect(metricsNamedIn(variable.definition.replace(/label_values\(([^,]+),.*/, '$1'))).to.deep.equal([
      'tollgate_requests_total',
    ]);
  });
});
