import { expect } from 'chai';
import { adminGet, adminSend, waitForRecords } from '../helpers/admin';
import { cachedAnswerCost, GPT_4O_MINI, picoPerToken } from '../helpers/answer-cost';
import { chatThrough, startTestGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

describe('budgets managed at runtime (POST/PATCH/DELETE /api/budgets)', () => {
  const upstream = new TestUpstream();
  const gateways: TestGateway[] = [];
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 };
  const actual = cachedAnswerCost();
  const worst =
    BigInt(Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3)) * picoPerToken(GPT_4O_MINI.input) +
    100n * picoPerToken(GPT_4O_MINI.output);
  const usd = (p: bigint) => `${p / 1_000_000_000_000n}.${(p % 1_000_000_000_000n).toString().padStart(12, '0')}`;
  // Room for two answers: the third request's reservation no longer fits.
  const twoAnswers = usd(actual + worst);

  before(() => upstream.start());
  after(() => upstream.stop());
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    upstream.reset();
  });

  const start = async (extra = '') => {
    const gw = await startTestGateway(
      upstream.url,
      `budgets: { runtime_refresh_ms: 200 }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: { budgets: [{ period: month, usd: "1000" }] }
${extra}`,
    );
    gateways.push(gw);
    return gw;
  };

  const chat = async (gw: TestGateway, headers: Record<string, string> = {}) => {
    const res = await chatThrough(gw, headers, body);
    const text = await res.body.text();
    return { status: res.statusCode, json: text.startsWith('{') ? JSON.parse(text) : undefined };
  };

  it('a per-key budget created on one instance refuses on both without a restart; PATCH raises it, DELETE removes it', async () => {
    const a = await start();
    const b = await start(`storage: { url: "sqlite:${a.dataDir}/tollgate.db" }`);
    const created = await adminSend(a, 'POST', '/api/budgets', { period: 'day', usd: twoAnswers, key: 'test' });
    expect(created.status, JSON.stringify(created.json)).to.equal(201);
    expect(created.json).to.include({ workspace: 'default', source: 'runtime', key: 'test', on_exceed: 'block' });
    const id = created.json.id as string;

    expect((await chat(a)).status).to.equal(200);
    expect((await chat(a)).status).to.equal(200);
    const refused = await chat(a);
    expect(refused.status).to.equal(429);
    expect(refused.json.error.code).to.equal('budget_exceeded');
    await waitForRecords(a, 2);
    // The other instance read it from the shared store, and counts the spend recorded there.
    await waitFor(async () => (await chat(b)).status === 429, 3000, 'instance b applies the runtime budget');

    const listed = (await adminGet(a, '/api/budgets')).data;
    expect(listed.map((x: any) => [x.id, x.source, x.scope])).to.have.deep.members([
      ['yaml:default:0', 'yaml', 'workspace'],
      [id, 'runtime', 'key_id=test'],
    ]);

    const raised = await adminSend(a, 'PATCH', `/api/budgets/${id}`, { usd: '10' });
    expect(raised.status, JSON.stringify(raised.json)).to.equal(200);
    expect(raised.json).to.include({ usd: '10', key: 'test', period: 'day' });
    expect((await chat(a)).status).to.equal(200);
    await waitFor(async () => (await chat(b)).status === 200, 3000, 'instance b applies the change');

    await adminSend(a, 'PATCH', `/api/budgets/${id}`, { usd: '0' });
    expect((await chat(a)).status).to.equal(429);
    await waitFor(async () => (await chat(b)).status === 429, 3000, 'instance b applies the lowered limit');
    const deleted = await adminSend(a, 'DELETE', `/api/budgets/${id}`);
    expect(deleted).to.deep.equal({ status: 200, json: { id, deleted: true } });
    expect((await chat(a)).status).to.equal(200);
    await waitFor(async () => (await chat(b)).status === 200, 3000, 'instance b drops the deleted budget');
    expect((await adminSend(a, 'DELETE', `/api/budgets/${id}`)).json.error.code).to.equal('budget_not_found');
  });

  it('a per_tag budget with an override: the default refuses its values, the overridden value gets its own limit', async () => {
    const gw = await start();
    const acme = { 'x-gateway-metadata-customer-id': 'acme' };
    const globex = { 'x-gateway-metadata-customer-id': 'globex' };
    // The tag is known once a request carried it.
    expect((await chat(gw, { 'x-gateway-metadata-customer-id': 'initech' })).status).to.equal(200);
    await waitForRecords(gw, 1);
    const created = await adminSend(gw, 'POST', '/api/budgets', {
      period: 'month',
      usd: twoAnswers,
      per_tag: 'customer_id',
      overrides: { acme: 10 },
      on_exceed: 'block',
    });
    expect(created.status, JSON.stringify(created.json)).to.equal(201);
    expect(created.json.overrides).to.deep.equal({ acme: '10' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await chat(gw, globex)).status, (await chat(gw, acme)).status);
    expect(statuses).to.deep.equal([200, 200, 200, 200, 429, 200]);
    const limits = (await adminGet(gw, '/api/budgets')).data
      .filter((x: any) => x.source === 'runtime')
      .map((x: any) => [x.scope, x.limit_usd]);
    expect(limits).to.deep.include.members([
      ['customer_id=acme', '10'],
      ['customer_id=globex', twoAnswers.replace(/0+$/, '')],
    ]);
  });

  it('a per_key budget with no spend yet is listed once at zero ("key_id=*"), paged like the rest, until a key spends', async () => {
    const gw = await start();
    const created = await adminSend(gw, 'POST', '/api/budgets', { period: 'month', usd: 50, per_key: true });
    expect(created.status, JSON.stringify(created.json)).to.equal(201);
    const mine = async () =>
      (await adminGet(gw, '/api/budgets')).data
        .filter((x: any) => x.id === created.json.id)
        .map((x: any) => [x.scope, x.spent_usd, x.limit_usd, x.used_share]);
    expect(await mine()).to.deep.equal([['key_id=*', '0', '50', 0]]);
    // One budget a page: the YAML budget and this one, each once.
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await adminGet(
        gw,
        `/api/budgets?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      ids.push(...page.data.map((x: any) => `${x.id} ${x.scope}`));
      cursor = page.next_cursor;
    } while (cursor);
    expect(ids).to.deep.equal((await adminGet(gw, '/api/budgets')).data.map((x: any) => `${x.id} ${x.scope}`));
    expect(ids).to.have.length(2);
    expect((await chat(gw)).status).to.equal(200);
    await waitForRecords(gw, 1);
    await waitFor(async () => (await mine())[0]?.[0] === 'key_id=test', 5000, 'the key listed with its spend');
    const [[, spent]] = await mine();
    expect(spent).to.equal(usd(actual).replace(/\.?0+$/, ''));
    expect(await mine()).to.have.length(1);
  });

  it('a warn budget never refuses', async () => {
    const gw = await start();
    const created = await adminSend(gw, 'POST', '/api/budgets', { period: 'day', usd: '0', on_exceed: 'warn' });
    expect(created.status, JSON.stringify(created.json)).to.equal(201);
    for (let i = 0; i < 3; i++) expect((await chat(gw)).status).to.equal(200);
    // A change that does not name on_exceed keeps it.
    const changed = await adminSend(gw, 'PATCH', `/api/budgets/${created.json.id}`, { usd: '0.000001' });
    expect(changed.json.on_exceed).to.equal('warn');
    expect((await chat(gw)).status).to.equal(200);
  });

  it('YAML budgets are read-only; bad budgets are refused with a clear message', async () => {
    const gw = await start();
    for (const method of ['PATCH', 'DELETE'] as const) {
      const r = await adminSend(gw, method, '/api/budgets/yaml:default:0', method === 'PATCH' ? { usd: 1 } : undefined);
      expect(r.status).to.equal(409);
      expect(r.json.error.code).to.equal('budget_read_only');
      expect(r.json.error.message).to.include('gateway.config.yaml');
    }
    const refusals: [object, string][] = [
      [{ period: 'day', usd: 5, key: 'key_nope' }, 'Unknown gateway key "key_nope"'],
      [{ period: 'day', usd: 5, per_tag: 'never_seen' }, 'Unknown tag "never_seen"'],
      [{ period: 'week', usd: 5 }, 'period'],
      [{ period: 'day', usd: 5, key: 'test', per_key: true }, 'at most one of tag, per_tag, key and per_key'],
      [{ period: 'day', usd: 5, on_exceed: 'drop' }, 'on_exceed must be warn, block or clamp'],
      [{ period: 'day', usd: 5, min_output_tokens: 100 }, 'min_output_tokens needs action: clamp'],
      [{ period: 'day', usd: 5, workspace: 'nope' }, 'Unknown workspace "nope"'],
    ];
    for (const [input, message] of refusals) {
      const r = await adminSend(gw, 'POST', '/api/budgets', input);
      expect(r.status, JSON.stringify(input)).to.equal(400);
      expect(r.json.error.code).to.equal('invalid_budget');
      expect(r.json.error.message).to.include(message);
    }
  });
});
