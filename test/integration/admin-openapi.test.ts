import { AlertService } from '../../alerts/service';
import { sleep } from '../helpers/wait';
import { SpendFreezes } from '../../services/spend-freezes';
import { alertsSchema } from '../../config/alerts';
import { AlertReceiver } from '../helpers/alert-receiver';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type Router from '@koa/router';
import { expect } from 'chai';
import { Client } from 'pg';
import { request } from 'undici';
import { createAdminApp } from '../../admin/app';
import { AdminReads } from '../../admin/reads/admin-reads';
import { adminOpenApiDocument } from '../../admin/openapi/document';
import { createLogger } from '../../runtime/logger';
import { probeRoutes } from '../../runtime/observability/probes';
import { Readiness } from '../../runtime/observability/readiness';
import { BudgetLedger } from '../../services/budget-ledger';
import { openStore } from '../../storage/open';
import { adminGet, waitForRecords } from '../helpers/admin';
import { PROJECT_ROOT } from '../helpers/fixtures';
import { AdminContract, checkedAdminAnswers } from '../helpers/admin-contract';
import { startTestGateway, TEST_ADMIN_TOKEN, type TestGateway, chatThrough } from '../helpers/gateway';
import { scrape, total } from '../helpers/prometheus';
import { postgresThroughRelay, TcpProxy } from '../helpers/tcp-proxy';
import { TestUpstream } from '../helpers/upstream';
import { requirePostgres, requireRedis } from '../helpers/services';

/**
 * The OpenAPI description of the admin API (admin/openapi). Every admin answer of the whole suite is checked
 * against it by the root hooks (helpers/admin-contract.ts); this suite checks the document itself, that it and
 * the router list the same routes, and produces each answer it describes at least once, errors included.
 */
describe('admin API: OpenAPI description', () => {
  const WORKSPACE = 'openapi-research';

  it('is a valid OpenAPI 3.1 document, and every schema in it compiles (ajv, draft 2020-12, strict)', async () => {
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const doc = adminOpenApiDocument();
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(doc.openapi).to.match(/^3\.1\./);
    expect(new AdminContract(doc).compileAll()).to.be.greaterThan(20);

    // The validator sees a broken document: a response without its required description.
    const broken = structuredClone(doc) as any;
    delete broken.paths['/api/usage'].get.responses['200'].description;
    expect((await new Validator().validate(broken)).valid).to.equal(false);
  });

  it('lists exactly the routes of the admin app', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-openapi-'));
    const store = await openStore(`sqlite:${join(dir, 'tollgate.db')}`);
    const reads = AdminReads.open(store.readSource(), { timeoutMs: 10_000 });
    const logger = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
    try {
      const app = createAdminApp({
        store,
        reads,
        token: TEST_ADMIN_TOKEN,
        logger,
        workspaces: [],
        budgets: new BudgetLedger(),
        alerts: new AlertService(alertsSchema.parse({}), undefined, new BudgetLedger(), logger),
        onKeysChanged: async () => undefined,
        runtimeBudgets: { table: store.runtimeBudgets!(), onBudgetsChanged: async () => undefined },
        freezes: new SpendFreezes(store.spendFreezes!(), logger, 60_000),
        probes: probeRoutes(
          new Readiness({ storeWritable: () => store.checkWritable(), draining: () => false, logger }),
        ),
        metrics: {
          scrape: async () => ({ contentType: 'text/plain', text: '' }),
          open: false,
          errorAnswered: () => undefined,
        },
      });
      // Each router's dispatch middleware carries its router (@koa/router); HEAD comes with every GET.
      const routers = app.middleware
        .map((m) => (m as { router?: Router }).router)
        .filter((r): r is Router => r !== undefined);
      expect(routers.length, 'routers mounted on the admin app').to.be.greaterThan(1);
      const routed = routers.flatMap((r) =>
        r.stack.flatMap((layer) =>
          layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`),
        ),
      );
      expect(routed.length).to.be.greaterThan(8);
      expect([...routed].sort()).to.deep.equal(new AdminContract().operations().sort());
    } finally {
      await reads.close();
      await store.close();
    }
  });

  describe('on a running gateway', () => {
    const upstream = new TestUpstream();
    const slack = new AlertReceiver('openapi-slack', true);
    let gw: TestGateway;
    before(async () => {
      await upstream.start();
      await slack.start();
      gw = await startTestGateway(
        upstream.url,
        `workspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { budgets: [{ period: day, usd: "50" }] } }, { id: ${WORKSPACE}, name: Research }]
alerts: { channels: [{ name: ops, type: slack, url: "${slack.url}" }] }`,
      );
      for (const customer of ['openapi-c1', 'openapi-c2', 'openapi-c1']) {
        const res = await chatThrough(gw, { 'x-gateway-metadata-customer': customer });
        expect(res.statusCode).to.equal(200);
        await res.body.text();
      }
      await waitForRecords(gw, 3);
    });
    after(async () => {
      await gw?.stop();
      await upstream.stop();
      await slack.stop();
    });

    const call = async (method: string, path: string, opts: { token?: string | null; body?: string } = {}) => {
      const token = opts.token === undefined ? TEST_ADMIN_TOKEN : opts.token;
      const res = await request(`${gw.adminUrl}${path}`, {
        method: method as 'GET',
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body,
      });
      const text = await res.body.text();
      return {
        status: res.statusCode,
        headers: res.headers,
        text,
        json: res.headers['content-type']?.toString().startsWith('application/json') ? JSON.parse(text) : undefined,
      };
    };

    it('GET /api/openapi.json answers the document without the admin token, and nothing of the deployment is in it', async () => {
      for (const token of [null, 'wrong-token', TEST_ADMIN_TOKEN]) {
        const res = await call('GET', '/api/openapi.json', { token });
        expect(res.status, String(token)).to.equal(200);
        expect(res.headers['content-type']).to.match(/^application\/json/);
        expect(res.json).to.deep.equal(adminOpenApiDocument());
        for (const own of [
          WORKSPACE,
          TEST_ADMIN_TOKEN,
          new URL(gw.url).port,
          new URL(gw.adminUrl!).port,
          'gpt-4o-mini',
          'openapi-c1',
        ])
          expect(res.text).to.not.include(own);
      }
    });

    it('every success answer it describes, each parameter used', async () => {
      const ranged = `from=${Date.now() - 86_400_000}&to=${Date.now() + 3_600_000}`;
      const usage = await adminGet(
        gw,
        `/api/usage?${ranged}&group_by=customer,model&interval=hour&filter[provider]=openai`,
      );
      expect(usage.rows.map((r: any) => r.group.customer).sort()).to.deep.equal(['openapi-c1', 'openapi-c2']);
      expect(usage.rows[0].bucket).to.be.a('string');
      expect(usage.total.requests).to.equal(3);

      const series = await adminGet(gw, `/api/usage/series?${ranged}&group_by=customer&value=openapi-c1&interval=day`);
      expect(series.series.map((s: any) => s.group)).to.deep.equal(['openapi-c1']);
      expect(series.total.requests.reduce((a: number, b: number) => a + b, 0)).to.equal(3);
      expect((await adminGet(gw, `/api/usage/series?${ranged}`)).other).to.equal(null);

      const first = await adminGet(gw, `/api/requests?${ranged}&limit=2`);
      expect(first.data).to.have.length(2);
      const second = await adminGet(
        gw,
        `/api/requests?${ranged}&limit=2&cursor=${encodeURIComponent(first.next_cursor)}`,
      );
      expect(second.data).to.have.length(1);
      expect(second.next_cursor).to.equal(null);

      const tested = await call('POST', '/api/alerts/test', { body: JSON.stringify({ channel: 'ops' }) });
      expect(tested.json).to.deep.include({ channel: 'ops', delivered: true });
      expect((await adminGet(gw, '/api/alerts?limit=5')).data).to.deep.equal([]);

      // A freeze as an anomaly rule stores it, listed and lifted.
      const frozen = {
        id: 'frz_openapi0000000000',
        workspace: WORKSPACE,
        scope: 'agent=openapi',
        reason: 'rule openapi: $9.00 in 10 min, $0.10 expected',
        createdAt: Date.now(),
        expiresAt: Date.now() + 3_600_000,
        liftedAt: null,
      };
      await gw.gateway.freezes!.freeze(frozen);
      expect((await adminGet(gw, '/api/freezes')).data.map((f: any) => [f.id, f.state])).to.deep.equal([
        [frozen.id, 'active'],
      ]);
      const lifted = await call('DELETE', `/api/freezes/${frozen.id}`);
      expect(lifted.json).to.include({ id: frozen.id, state: 'lifted', scope: 'agent=openapi' });
      expect((await adminGet(gw, '/api/freezes')).data).to.deep.equal([]);
      expect((await adminGet(gw, '/api/freezes?state=all&limit=5')).data[0]).to.include({ state: 'lifted' });

      const csv = await call('GET', `/api/usage.csv?${ranged}&group_by=customer`);
      expect(csv.status).to.equal(200);
      expect(csv.headers['content-type']).to.match(/^text\/csv/);
      expect(csv.text.split('\r\n')[0]).to.match(/^customer,requests,/);
      const focus = await call('GET', `/api/usage.focus.csv?${ranged}&tag=customer`);
      expect(focus.status, focus.text.slice(0, 300)).to.equal(200);
      expect(focus.text.split('\r\n')[0].split(',')).to.include.members(['BilledCost', 'x_tag_customer']);
      const latency = await adminGet(gw, `/api/latency?${ranged}`);
      expect(latency.errors.requests).to.equal(latency.models.reduce((a: number, m: any) => a + m.requests, 0));
      const searched = await adminGet(gw, `/api/usage?${ranged}&group_by=customer&search=C1`);
      expect(searched.rows.map((r: any) => r.group.customer)).to.deep.equal(['openapi-c1']);

      const budget = await call('POST', '/api/budgets', {
        body: JSON.stringify({ workspace: WORKSPACE, period: 'day', usd: '5', on_exceed: 'warn' }),
      });
      expect(budget.status, budget.text).to.equal(201);
      const budgetPath = `/api/budgets/${budget.json.id}`;
      expect((await call('PATCH', budgetPath, { body: JSON.stringify({ usd: '6' }) })).json.usd).to.equal('6');
      expect((await call('PATCH', budgetPath, { body: JSON.stringify({ usd: 'six' }) })).status).to.equal(400);
      expect(
        (await call('PATCH', budgetPath, { body: JSON.stringify({ tag: { a: 'x'.repeat(70_000) } }) })).status,
      ).to.equal(413);
      expect((await call('DELETE', budgetPath)).json).to.deep.equal({ id: budget.json.id, deleted: true });

      const created = await call('POST', '/api/keys', {
        body: JSON.stringify({ workspace: WORKSPACE, label: 'openapi' }),
      });
      expect(created.status).to.equal(201);
      expect((await adminGet(gw, `/api/keys?workspace=${WORKSPACE}`)).data.map((k: any) => k.id)).to.deep.equal([
        created.json.id,
      ]);
      const bulk = await call('POST', '/api/keys/bulk', {
        body: JSON.stringify({ keys: [{ workspace: WORKSPACE, label: 'bulk' }] }),
      });
      expect(bulk.status).to.equal(201);
      expect(bulk.json.data[0]).to.include({ workspace: WORKSPACE, label: 'bulk', revoked: false });
      expect((await call('DELETE', `/api/keys/${bulk.json.data[0].id}`)).status).to.equal(200);
      expect((await call('DELETE', `/api/keys/${created.json.id}`)).json).to.deep.equal({
        id: created.json.id,
        revoked: true,
      });

      expect((await adminGet(gw, '/api/budgets')).data[0]).to.include({
        workspace: 'default',
        period: 'day',
        limit_usd: '50',
      });
      expect((await adminGet(gw, '/api/dimensions')).tags).to.include('customer');
      expect(await adminGet(gw, '/api/reconciliation?provider=openai&limit=5&lines_limit=5')).to.deep.equal({
        runs: [],
        next_cursor: null,
        report: null,
      });
      const info = await adminGet(gw, '/api/info');
      expect(info.workspaces.map((w: any) => w.id)).to.deep.equal(['default', WORKSPACE]);
      // The stamp `npm run build` wrote (npm test builds first); null for code compiled by tsc alone.
      const stamp = join(PROJECT_ROOT, 'dist/build-info.json');
      expect(info.build).to.deep.equal(existsSync(stamp) ? JSON.parse(readFileSync(stamp, 'utf8')) : null);

      expect((await call('GET', '/healthz', { token: null })).json).to.deep.equal({ status: 'ok' });
      expect((await call('GET', '/readyz', { token: null })).json.status).to.equal('ready');
      const metrics = await call('GET', '/metrics');
      expect(metrics.status).to.equal(200);
      expect(metrics.text).to.match(/^tollgate_requests_total\{/m);
    });

    /** Each path answers 400 with this code, `param` naming the parameter at fault. */
    const refusedWith = async (code: string, cases: [path: string, param: string][]) => {
      for (const [path, param] of cases) {
        const res = await call('GET', path);
        expect(res.status, `${path}: ${res.text}`).to.equal(400);
        expect(res.json.error, path).to.include({ code, param });
      }
    };

    it('refuses each malformed parameter with 400 invalid_body naming it', async () => {
      await refusedWith('invalid_body', [
        ['/api/usage?from=yesterday', 'from'],
        ['/api/usage?from=2025-02-01&to=2025-01-01', 'from'],
        ['/api/usage?to=99999999999999999999', 'to'],
        ['/api/usage?group_by=a,b,c,d', 'group_by'],
        ['/api/usage?group_by=model,model', 'group_by'],
        ['/api/reconciliation?run=0', 'run'],
        ['/api/usage?group_by=tag:', 'group_by'],
        ['/api/usage?interval=week', 'interval'],
        ['/api/usage?filter[status]=ok', 'filter[status]'],
        ['/api/usage.csv?interval=minute', 'interval'],
        ['/api/usage.focus.csv?to=99999999999999999999', 'to'],
        ['/api/usage/series?group_by=model,provider', 'group_by'],
        [`/api/usage/series?group_by=model&${Array.from({ length: 21 }, (_, i) => `value=m${i}`).join('&')}`, 'value'],
        ['/api/usage/series?from=0&to=8640000000000000&interval=hour', 'to'],
        ['/api/requests?limit=0', 'limit'],
        ['/api/requests?limit=1001', 'limit'],
        ['/api/requests?cursor=not-a-cursor', 'cursor'],
        ['/api/requests?filter[status]=2xx', 'filter[status]'],
        ['/api/usage?offset=-1', 'offset'],
        [`/api/usage?group_by=model&search=${'x'.repeat(201)}`, 'search'],
        ['/api/latency?interval=minute', 'interval'],
        ['/api/keys?limit=0', 'limit'],
        ['/api/keys?cursor=not-a-cursor', 'cursor'],
        ['/api/budgets?limit=1001', 'limit'],
        ['/api/budgets?cursor=not-a-cursor', 'cursor'],
        ['/api/alerts?limit=0', 'limit'],
        ['/api/freezes?state=frozen', 'state'],
        ['/api/alerts?cursor=not-a-cursor', 'cursor'],
      ]);
    });

    it('refuses a range holding too many buckets (or rows) with 400 range_too_large', async () => {
      await refusedWith('range_too_large', [
        ['/api/usage/series?from=0&to=2000000000000&interval=hour', 'from'],
        ['/api/usage?from=0&to=2000000000000&interval=day', 'from'],
        ['/api/usage.csv?from=0&to=2000000000000&interval=day', 'from'],
        ['/api/usage?from=0&to=2000000000&interval=hour&group_by=model&limit=1000', 'limit'],
      ]);
    });

    it('its documented errors: key body refused, unknown key, no token, unknown route', async () => {
      const refused = [
        [await call('POST', '/api/keys', { body: '{"workspace":' }), 400, 'invalid_json'],
        [await call('POST', '/api/keys', { body: '[]' }), 400, 'invalid_body'],
        [await call('POST', '/api/keys', { body: JSON.stringify({ workspace: 'nope' }) }), 400, 'invalid_body'],
        [await call('POST', '/api/keys', { body: JSON.stringify({ label: 'x'.repeat(201) }) }), 400, 'invalid_body'],
        [await call('POST', '/api/keys/bulk', { body: JSON.stringify({ keys: [] }) }), 400, 'invalid_body'],
        [await call('POST', '/api/keys/bulk', { body: '{"keys":' }), 400, 'invalid_json'],
        [
          await call('POST', '/api/keys/bulk', { body: JSON.stringify({ keys: [{ label: 'x'.repeat(600_000) }] }) }),
          413,
          'body_too_large',
        ],
        [
          await call('POST', '/api/keys', { body: JSON.stringify({ label: 'x'.repeat(70_000) }) }),
          413,
          'body_too_large',
        ],
        [await call('POST', '/api/alerts/test', { body: '{"channel":' }), 400, 'invalid_json'],
        [await call('POST', '/api/alerts/test', { body: JSON.stringify({ channel: 'nope' }) }), 400, 'invalid_body'],
        [
          await call('POST', '/api/alerts/test', { body: JSON.stringify({ channel: 'x'.repeat(70_000) }) }),
          413,
          'body_too_large',
        ],
        [await call('DELETE', '/api/keys/key_000000000000'), 404, 'route_not_found'],
        [
          await call('POST', '/api/budgets', { body: JSON.stringify({ period: 'week', usd: '1' }) }),
          400,
          'invalid_budget',
        ],
        [
          await call('POST', '/api/budgets', { body: JSON.stringify({ tag: 'x'.repeat(70_000) }) }),
          413,
          'body_too_large',
        ],
        [await call('PATCH', '/api/budgets/bud_000000000000', { body: '{}' }), 404, 'budget_not_found'],
        [await call('PATCH', '/api/budgets/yaml:default:0', { body: '{}' }), 409, 'budget_read_only'],
        [await call('DELETE', '/api/budgets/bud_000000000000'), 404, 'budget_not_found'],
        [await call('DELETE', '/api/freezes/frz_0000000000000000'), 404, 'freeze_not_found'],
        [await call('DELETE', '/api/budgets/yaml:default:0'), 409, 'budget_read_only'],
        [await call('GET', '/api/budgets', { token: null }), 401, 'admin_token_invalid'],
        [await call('GET', '/api/nope'), 404, 'route_not_found'],
      ] as const;
      for (const [res, status, code] of refused) {
        expect(res.status, res.text).to.equal(status);
        expect(res.json.error.code).to.equal(code);
      }
      // A route that exists, asked with a method it does not take: 405 naming the ones it does, not 404.
      for (const [method, path, allow] of [
        ['PUT', '/api/keys', 'HEAD, GET, POST'],
        ['PATCH', '/api/keys/key_000000000000', 'DELETE'],
        ['POST', '/api/usage', 'HEAD, GET'],
      ] as const) {
        const res = await request(`${gw.adminUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        const body = (await res.body.json()) as any;
        expect(res.statusCode, `${method} ${path}`).to.equal(405);
        expect(res.headers.allow, `${method} ${path}`).to.equal(allow);
        expect(body.error).to.include({ code: 'method_not_allowed', type: 'invalid_request_error' });
      }
    });

    it('GET /metrics answers 404 route_not_found on a gateway with metrics off', async () => {
      const off = await startTestGateway(upstream.url, 'metrics: { enabled: false }');
      try {
        const res = await request(`${off.adminUrl}/metrics`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        expect(res.statusCode).to.equal(404);
        expect(((await res.body.json()) as any).error.code).to.equal('route_not_found');
      } finally {
        await off.stop();
      }
    });

    it('the check against the document fails a wrong answer', async () => {
      const contract = new AdminContract();
      const res = await request(`${gw.adminUrl}/api/usage?group_by=model`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      const answer = {
        method: 'GET',
        path: '/api/usage?group_by=model',
        status: res.statusCode,
        headers: res.headers,
        body: await res.body.text(),
      };
      expect(contract.check(answer)).to.deep.equal({ answer: 'GET /api/usage 200', problems: [] });
      const body = JSON.parse(answer.body);
      const tampered = (change: (b: any) => void) => {
        const b = structuredClone(body);
        change(b);
        return contract.check({ ...answer, body: JSON.stringify(b) }).problems;
      };
      expect(tampered((b) => (b.total.cost_usd = Number(b.total.cost_usd)))).to.have.length.greaterThan(0);
      expect(tampered((b) => (b.total.cost_usd = '0.1e-3'))).to.have.length.greaterThan(0);
      expect(tampered((b) => (b.rows[0].secret = 'x'))).to.have.length.greaterThan(0);
      expect(tampered((b) => delete b.rows[0].requests)).to.have.length.greaterThan(0);
      expect(tampered((b) => (b.from = 'yesterday'))).to.have.length.greaterThan(0);
      expect(contract.check({ ...answer, status: 418 }).problems).to.deep.equal([
        'status 418 is not documented for GET /api/usage',
      ]);
      expect(contract.check({ ...answer, headers: { 'content-type': 'text/plain' } }).problems[0]).to.match(
        /content-type "text\/plain" is not documented/,
      );
      expect(contract.check({ ...answer, path: '/api/usage-everything' }).problems[0]).to.match(/no such operation/);
      expect(
        contract.check({
          ...answer,
          status: 401,
          body: '{"error":{"message":"no","type":"authentication_error","param":null,"code":"rate_limited"}}',
        }).problems,
      ).to.have.length.greaterThan(0);
    });
  });

  it('503 query_timeout when a read runs past admin.query_timeout_ms', async () => {
    const upstream = new TestUpstream();
    await upstream.start();
    // 1 ms: no read can be answered in that time, the reader thread has yet to start.
    const gw = await startTestGateway(upstream.url, 'admin: { query_timeout_ms: 1 }');
    try {
      const res = await request(`${gw.adminUrl}/api/usage?group_by=model`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      const body = (await res.body.json()) as any;
      expect(res.statusCode, JSON.stringify(body)).to.equal(503);
      expect(body.error).to.include({ code: 'query_timeout', type: 'gateway_error', param: null });
      expect(body.error.message).to.include('1 ms');
    } finally {
      await gw.stop();
      await upstream.stop();
    }
  });

  it('429 auth_blocked with Retry-After once an address sent too many wrong tokens', async () => {
    const upstream = new TestUpstream();
    await upstream.start();
    const gw = await startTestGateway(
      upstream.url,
      'admin: { lockout: { max_failures: 2, window_ms: 60000, block_ms: 1000 } }',
    );
    try {
      const get = async (token: string) => {
        const res = await request(`${gw.adminUrl}/api/usage`, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.statusCode, retryAfter: res.headers['retry-after'], json: (await res.body.json()) as any };
      };
      expect((await get('guess-1')).status).to.equal(401);
      const blocked = await get('guess-2');
      expect(blocked.status).to.equal(429);
      expect(blocked.json.error.code).to.equal('auth_blocked');
      expect(blocked.retryAfter).to.equal('1');
      // Unblocked after block_ms (the secret scan reads this gateway's answers when it stops).
      const deadline = Date.now() + 5000;
      while ((await get(TEST_ADMIN_TOKEN)).status !== 200 && Date.now() < deadline) await sleep(100);
      expect((await get(TEST_ADMIN_TOKEN)).status).to.equal(200);
    } finally {
      await gw.stop();
      await upstream.stop();
    }
  });

  it('503 store_unavailable with Retry-After when the store cannot be reached, without the cause in the answer', async function () {
    const PG_URL = await requirePostgres(this, 'the store-unreachable answer');
    const { relay, schema, storageYaml } = await postgresThroughRelay(PG_URL, 'tg_openapi');
    const upstream = new TestUpstream();
    await upstream.start();
    const gw = await startTestGateway(upstream.url, storageYaml);
    try {
      relay.cut();
      for (const [method, path] of [
        ['GET', '/api/usage'],
        ['POST', '/api/keys'],
      ] as const) {
        const res = await request(`${gw.adminUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        const text = await res.body.text();
        expect(res.statusCode, text).to.equal(503);
        expect(res.headers['retry-after']).to.equal('5');
        expect(JSON.parse(text).error).to.deep.equal({
          message: 'The usage store cannot be reached; try again shortly',
          type: 'gateway_error',
          param: null,
          code: 'store_unavailable',
        });
        expect(text).to.not.include(String(relay.port));
      }
      // Every refusal is counted by its reason, the admin listener's too: on-call sees the store refusing reads.
      expect(total(await scrape(gw.adminUrl!), 'tollgate_admin_errors_total', { code: 'store_unavailable' })).to.equal(
        2,
      );
      relay.restore();
    } finally {
      relay.restore();
      await gw.stop();
      await upstream.stop();
      await relay.stop();
      const c = new Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    }
  });

  it('503 limits_unavailable with Retry-After when the Redis limit store holding the budgets cannot be reached', async function () {
    const REDIS_URL = await requireRedis(this, 'the limit-store-unreachable answer');
    const target = new URL(REDIS_URL);
    const relay = new TcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    await relay.start();
    const upstream = new TestUpstream();
    await upstream.start();
    const gw = await startTestGateway(
      upstream.url,
      `limit_store: { redis_url: "redis://127.0.0.1:${relay.port}", on_error: closed, key_prefix: "tg-openapi-${process.pid}-${Date.now().toString(36)}:" }
workspaces: [{ id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }], limits: { budgets: [{ period: day, usd: "10" }] } }]`,
    );
    try {
      expect((await adminGet(gw, '/api/budgets')).data).to.have.length(1);
      relay.cut();
      const res = await request(`${gw.adminUrl}/api/budgets`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      const body = (await res.body.json()) as any;
      expect(res.statusCode, JSON.stringify(body)).to.equal(503);
      expect(body.error.code).to.equal('limits_unavailable');
      expect(res.headers['retry-after']).to.equal('1');
      const ready = await request(`${gw.adminUrl}/readyz`);
      expect(ready.statusCode).to.equal(503);
      expect(((await ready.body.json()) as any).failed).to.deep.equal(['limit_store']);
    } finally {
      relay.restore();
      // Readable again once the limit store's circuit breaker closes (the secret scan reads them when it stops).
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const again = await request(`${gw.adminUrl}/api/budgets`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        });
        await again.body.text();
        if (again.statusCode === 200) break;
        await sleep(100);
      }
      await gw.stop();
      await upstream.stop();
      await relay.stop();
    }
  });

  // Last (mocha runs a suite's own tests before its nested suites): after every answer above was read.
  describe('coverage', () => {
    it('the answers of this suite cover every answer the document describes, and each was checked against it', () => {
      const seen = checkedAdminAnswers();
      // Every route's 401, 429 and 500 come from the same middleware, and every /api read's 503 query_timeout from the
      // same reader thread: one of each (above) stands for all. The 500 answers only what nothing foresaw; the 503
      // store_unavailable needs PostgreSQL to cut, the budgets' 503 limits_unavailable and /readyz's 503 Redis.
      // /metrics' 503 needs a multi-core gateway with a stopped worker: multi-core.test.ts, whose answers are checked.
      const shared = ['401', '429', '503'];
      const needsRedis = (a: string) => a === 'GET /readyz 503' && !process.env.REDIS_URL;
      const elsewhere = (a: string) => a === 'GET /metrics 503';
      const perRoute = new AdminContract()
        .documentedAnswers()
        .filter(
          (a) =>
            !/ (401|429|500)$/.test(a) &&
            !/^\w+ \/api\/\S* 503$/.test(a) &&
            !needsRedis(a) &&
            !elsewhere(a) &&
            !seen.has(a),
        );
      expect(perRoute, 'documented answers never produced').to.deep.equal([]);
      for (const status of shared)
        expect(
          [...seen.keys()].some((a) => a.endsWith(` ${status}`)),
          `some ${status} answer`,
        ).to.equal(true);
    });
  });
});
