import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { request } from 'undici';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { adminGet, waitForRecords } from '../helpers/admin';
import { cachedAnswerCost, GPT_4O_MINI, picoPerToken } from '../helpers/answer-cost';
import {
  OPENAI_KEY,
  startTestGateway,
  TEST_GATEWAY_KEY,
  type TestGateway,
  useGatewayPerTest,
  workspaceWith,
} from '../helpers/gateway';
import { sseChunks, TestUpstream } from '../helpers/upstream';

interface Call {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

describe('workspace limits', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  useGatewayPerTest(upstream, () => gw);

  /** `extra`: more configuration (YAML), e.g. a limit_store block. */
  const start = async (limits: string, extra = '') => {
    gw = await startTestGateway(upstream.url, workspaceWith(limits) + extra);
  };

  async function post(path: string, body: object, headers: Record<string, string> = {}): Promise<Call> {
    const res = await request(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-key': TEST_GATEWAY_KEY,
        authorization: `Bearer ${OPENAI_KEY}`,
        'x-api-key': 'sk-ant-x',
        ...headers,
      },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, json: text.startsWith('{') ? JSON.parse(text) : undefined };
  }
  const chat = (extra: object = {}, headers: Record<string, string> = {}) =>
    post(
      '/v1/chat/completions',
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra },
      headers,
    );

  it('refuses to start when a limit is set but its plugin is not in the pipeline', async () => {
    const err = await startTestGateway(
      upstream.url,
      `${workspaceWith('{ requests_per_minute: 5 }')}\nplugins: [{ use: auth }, { use: usage-recorder }]`,
    ).catch((e) => e);
    expect(err).to.be.instanceOf(Error);
    expect(err.message).to.include('workspaces.default.limits needs the "rate-limit" plugin');
  });

  describe('max_tokens cap', () => {
    beforeEach(() => start('{ max_tokens: 100 }'));

    const cases: [string, string, object][] = [
      ['/v1/chat/completions', 'max_tokens', { model: 'gpt-4o-mini', messages: [] }],
      ['/v1/chat/completions', 'max_completion_tokens', { model: 'gpt-4o-mini', messages: [] }],
      ['/v1/messages', 'max_tokens', { model: 'claude-sonnet-4-5', messages: [] }],
      ['/v1/responses', 'max_output_tokens', { model: 'gpt-5.4', input: 'hi' }],
    ];
    for (const [path, field, body] of cases) {
      it(`${path} ${field}: exactly the cap passes, one over is refused naming the cap`, async () => {
        expect((await post(path, { ...body, [field]: 100 })).status).to.equal(200);
        const over = await post(path, { ...body, [field]: 101 });
        expect(over.status).to.equal(400);
        expect(over.json.error.code).to.equal('max_tokens_exceeded');
        expect(over.json.error.param).to.equal(field);
        expect(over.json.error.message).to.include('100');
        expect(upstream.received).to.have.length(1);
        // The request that passed was forwarded unchanged (never rewritten).
        expect(JSON.parse(upstream.received[0].body.toString())[field]).to.equal(100);
      });

      it(`${path} ${field}: anything but a non-negative integer is refused as invalid_body naming it`, async () => {
        for (const bad of ['100000', '50', 99.5, -1, true]) {
          const r = await post(path, { ...body, [field]: bad });
          expect(r.status, JSON.stringify(bad)).to.equal(400);
          expect(r.json.error.code).to.equal('invalid_body');
          expect(r.json.error.param).to.equal(field);
          expect(r.json.error.message).to.include(field);
        }
        expect(upstream.received).to.have.length(0);
      });
    }

    it("a request naming no limit gets the cap in the provider's own field (max_tokens_when_absent: cap, the default)", async () => {
      expect((await post('/v1/messages', { model: 'claude-sonnet-4-5', messages: [] })).status).to.equal(200);
      expect((await post('/v1/chat/completions', { model: 'gpt-4o-mini', messages: [] })).status).to.equal(200);
      expect(upstream.received.map((r) => JSON.parse(r.body.toString()))).to.deep.equal([
        { model: 'claude-sonnet-4-5', messages: [], max_tokens: 100 },
        { model: 'gpt-4o-mini', messages: [], max_completion_tokens: 100 },
      ]);
    });
  });

  describe('request rate', () => {
    it('requests_per_minute: the limit passes, one more is refused with Retry-After and x-ratelimit headers', async () => {
      await start('{ requests_per_minute: 5 }');
      const remaining: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await chat();
        expect(r.status).to.equal(200);
        expect(r.headers['x-ratelimit-limit']).to.equal('5');
        remaining.push(String(r.headers['x-ratelimit-remaining']));
      }
      expect(remaining).to.deep.equal(['4', '3', '2', '1', '0']);
      const refused = await chat();
      expect(refused.status).to.equal(429);
      expect(refused.json.error.code).to.equal('rate_limited');
      expect(refused.json.error.type).to.equal('rate_limit_error');
      // 5 per minute refill one token every 12 s.
      expect(Number(refused.headers['retry-after'])).to.be.within(11, 12);
      expect(refused.headers['x-ratelimit-remaining']).to.equal('0');
      expect(upstream.received).to.have.length(5);
      const records = await waitForRecords(gw, 6);
      expect(records.filter((r) => r.error_code === 'rate_limited')).to.have.length(1);
    });

    it('requests_per_second: a burst limit on top of the per-minute one', async () => {
      await start('{ requests_per_minute: 100, requests_per_second: 2 }');
      expect((await chat()).status).to.equal(200);
      expect((await chat()).status).to.equal(200);
      const refused = await chat();
      expect(refused.status).to.equal(429);
      expect(refused.headers['retry-after']).to.equal('1');
      await sleep(600); // half a second refills one of the two tokens
      expect((await chat()).status).to.equal(200);
    });

    it('a request refused by the concurrency limit gives its request-rate token back', async () => {
      await start('{ requests_per_minute: 2, concurrent_streams: 1 }');
      const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
      upstream.respondWith((req) =>
        JSON.parse(req.body.toString()).stream
          ? { headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 100 }
          : undefined,
      );
      const stream = () =>
        request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-gateway-key': TEST_GATEWAY_KEY,
            authorization: `Bearer ${OPENAI_KEY}`,
          },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
        });
      const open = await stream(); // token 1 of 2
      for (let i = 0; i < 3; i++) {
        const refused = await stream();
        expect(refused.statusCode).to.equal(429);
        expect(((await refused.body.json()) as any).error.code, `refusal ${i}`).to.equal('concurrency_limited');
        await sleep(50); // the refund runs in onComplete, after the answer went out
      }
      const second = await chat();
      expect(second.status, 'token 2 of 2 is still there').to.equal(200);
      expect(second.headers['x-ratelimit-remaining']).to.equal('0');
      expect((await chat()).json.error.code).to.equal('rate_limited');
      await open.body.text();
    });

    it("per tag value: one customer cannot use up another one's quota", async () => {
      await start('{ per_tag: { customer_id: { requests_per_minute: 2 } } }');
      const acme = { 'x-gateway-metadata-customer-id': 'acme' };
      expect((await chat({}, acme)).status).to.equal(200);
      expect((await chat({}, acme)).status).to.equal(200);
      const refused = await chat({}, acme);
      expect(refused.status).to.equal(429);
      expect(refused.json.error.message).to.include('customer_id=acme');
      expect((await chat({}, { 'x-gateway-metadata-customer-id': 'globex' })).status).to.equal(200);
      expect((await chat()).status, 'untagged requests are not limited per tag').to.equal(200);
    });

    it('tokens_per_minute: counted from recorded usage, refused once used up', async () => {
      const u = fixtureJson('openai/chat_completion_cached_tokens.json').usage;
      const perRequest = u.prompt_tokens + u.completion_tokens; // disjoint buckets add up to prompt + completion
      await start(`{ tokens_per_minute: ${perRequest * 2} }`);
      expect((await chat()).status).to.equal(200);
      await sleep(50);
      expect((await chat()).status).to.equal(200);
      await sleep(50);
      const refused = await chat();
      expect(refused.status).to.equal(429);
      expect(refused.json.error.message).to.include(`${perRequest * 2} of ${perRequest * 2} tokens per minute`);
    });
  });

  describe('concurrent streams', () => {
    const slowStream = () => {
      const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
      upstream.respondWith((req) =>
        JSON.parse(req.body.toString()).stream
          ? { headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 100 }
          : undefined,
      );
    };
    const openStream = async (headers: Record<string, string> = {}, signal?: AbortSignal) =>
      request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': TEST_GATEWAY_KEY,
          authorization: `Bearer ${OPENAI_KEY}`,
          ...headers,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
        signal,
      });

    it('refuses a stream over the limit, frees the slot when a stream ends, and never counts JSON requests', async () => {
      await start('{ concurrent_streams: 2 }');
      slowStream();
      const a = await openStream();
      const b = await openStream();
      expect([a.statusCode, b.statusCode]).to.deep.equal([200, 200]);
      const c = await openStream();
      expect(c.statusCode).to.equal(429);
      expect(((await c.body.json()) as any).error.code).to.equal('concurrency_limited');
      expect(c.headers['retry-after']).to.equal('1');
      expect((await chat()).status, 'a non-streamed request needs no slot').to.equal(200);
      await a.body.text();
      const d = await openStream();
      expect(d.statusCode).to.equal(200);
      await Promise.all([b.body.text(), d.body.text()]);
    });

    it('never leaks a slot when clients abort, however often', async () => {
      await start('{ concurrent_streams: 2 }');
      slowStream();
      for (let i = 0; i < 20; i++) {
        const controller = new AbortController();
        const res = await openStream({}, controller.signal);
        expect(res.statusCode, `round ${i}`).to.equal(200);
        await res.body[Symbol.asyncIterator]().next();
        controller.abort();
        await res.body.text().catch(() => undefined);
        // Wait until the gateway has completed (and released) the aborted request.
        for (let t = 0; t < 100 && gw.gateway.proxy.inflight > 0; t++) await sleep(10);
      }
      const [x, y] = await Promise.all([openStream(), openStream()]);
      expect([x.statusCode, y.statusCode]).to.deep.equal([200, 200]);
      await Promise.all([x.body.text(), y.body.text()]);
    });

    it('per tag value: at most N open streams per customer', async () => {
      await start('{ per_tag: { customer_id: { concurrent_streams: 1 } } }');
      slowStream();
      const acme = { 'x-gateway-metadata-customer-id': 'acme' };
      const first = await openStream(acme);
      const second = await openStream(acme);
      expect(second.statusCode).to.equal(429);
      await second.body.text();
      const other = await openStream({ 'x-gateway-metadata-customer-id': 'globex' });
      expect(other.statusCode).to.equal(200);
      await Promise.all([first.body.text(), other.body.text()]);
    });

    it('an open stream keeps its slot past the slot lease: its lease is renewed while it runs', async () => {
      await start('{ concurrent_streams: 1 }', '\nlimit_store:\n  slot_lease_ms: 1000\n');
      slowStream(); // 16 events, 100 ms apart: the stream stays open ~1.6 s, well past the 1 s lease
      const first = await openStream();
      expect(first.statusCode).to.equal(200);
      const admitted = Date.now(); // the slot's lease began before the answer's headers: it ends before admitted + 1 s
      const reading = first.body.text();
      await sleep(1300 - (Date.now() - admitted));
      const second = await openStream();
      expect(second.statusCode, 'the slot lapsed although its stream was still open').to.equal(429);
      await second.body.text();
      await reading;
      const after = await openStream();
      expect(after.statusCode, 'the slot is free once the stream ended').to.equal(200);
      await after.body.text();
    });
  });

  describe('budgets', () => {
    const gpt4oMini = GPT_4O_MINI;
    const pico = picoPerToken;
    // Actual cost of one recorded answer (the cached-tokens fixture), computed by hand from the catalog.
    const actual = cachedAnswerCost();
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 };
    // Reservation: body bytes / 3 input tokens (documented estimate) + max_tokens output tokens, at list price.
    const worst =
      BigInt(Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3)) * pico(gpt4oMini.input) +
      100n * pico(gpt4oMini.output);
    const usd = (p: bigint) => `${p / 1_000_000_000_000n}.${(p % 1_000_000_000_000n).toString().padStart(12, '0')}`;
    const trim = (s: string) => s.replace(/0+$/, '').replace(/\.$/, '');
    /** The reservation of a chat body: input bytes / 3 (at most the context window) + output tokens, at list price. */
    const reservation = (b: object, outputTokens: number) =>
      BigInt(Math.min(Math.ceil(Buffer.byteLength(JSON.stringify(b)) / 3), gpt4oMini.context_window)) *
        pico(gpt4oMini.input) +
      BigInt(outputTokens) * pico(gpt4oMini.output);

    it('admits requests while spent + reservation fits, refuses the first that does not, and raises the alert', async () => {
      const limit = actual * 3n + worst; // exactly room for a 4th admission, not a 5th
      await start(`{ budgets: [{ period: day, usd: "${usd(limit)}", alert_at: 0.5 }] }`);
      let admitted = 0;
      for (let i = 0; i < 10; i++) {
        const r = await post('/v1/chat/completions', body);
        if (r.status !== 200) {
          expect(r.status).to.equal(429);
          expect(r.json.error.code).to.equal('budget_exceeded');
          expect(r.json.error.message).to.match(
            /^The daily budget of \$[\d.]+ for workspace default does not cover this request/,
          );
          expect(Number(r.headers['retry-after'])).to.be.within(1, 24 * 3600);
          break;
        }
        admitted++;
      }
      expect(admitted).to.equal(4);
      const budgets = (await adminGet(gw, '/api/budgets')).data;
      expect(budgets).to.have.length(1);
      expect(budgets[0].spent_usd).to.equal(trim(usd(actual * 4n)));
      expect(budgets[0].reserved_usd).to.equal('0');
      expect(budgets[0].alerted).to.equal(true);
      expect(gw.logs.some((l) => l.includes('budget alert'))).to.equal(true);
    });

    it('the alert fires when the spend reaches exactly alert_at of the limit, not a pico-dollar before', async () => {
      // One answer costs `actual`: exactly half of the daily limit, and a pico-dollar short of half the monthly one.
      const daily = actual * 2n;
      await start(
        `{ budgets: [{ period: day, usd: "${usd(daily)}", alert_at: 0.5 }, { period: month, usd: "${usd(daily + 2n)}", alert_at: 0.5 }] }`,
      );
      expect((await post('/v1/chat/completions', body)).status).to.equal(200);
      await waitForRecords(gw, 1); // the budget settles in onComplete, before usage-recorder stores the record
      const budgets = (await adminGet(gw, '/api/budgets')).data;
      expect(budgets.map((b: any) => [b.period, b.spent_usd, b.alerted])).to.have.deep.members([
        ['day', trim(usd(actual)), true],
        ['month', trim(usd(actual)), false],
      ]);
      const alerts = gw.logs.filter((l) => l.includes('budget alert')).map((l) => JSON.parse(l));
      expect(alerts.map((a) => [a.msg, a.spentUsd, a.limitUsd])).to.deep.equal([
        ['budget alert: 50% of the daily budget used', trim(usd(actual)), trim(usd(daily))],
      ]);
    });

    it('reserves the worst case for open streams, so concurrent streams cannot overshoot', async () => {
      const limit = worst * 2n + worst / 2n; // two reservations fit, a third does not
      await start(`{ budgets: [{ period: month, usd: "${usd(limit)}" }] }`);
      const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
      upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 60 }));
      const open = () =>
        request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-gateway-key': TEST_GATEWAY_KEY,
            authorization: `Bearer ${OPENAI_KEY}`,
          },
          body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
        });
      const a = await open();
      const b = await open();
      const c = await open();
      expect([a.statusCode, b.statusCode, c.statusCode]).to.deep.equal([200, 200, 429]);
      await Promise.all([a.body.text(), b.body.text(), c.body.text()]);
    });

    it('a budget per tag value leaves other customers alone', async () => {
      await start(`{ budgets: [{ period: day, usd: "${usd(actual + worst)}", per_tag: customer_id }] }`);
      const acme = { 'x-gateway-metadata-customer-id': 'acme' };
      expect((await post('/v1/chat/completions', body, acme)).status).to.equal(200);
      expect((await post('/v1/chat/completions', body, acme)).status).to.equal(200);
      expect((await post('/v1/chat/completions', body, acme)).status).to.equal(429);
      expect(
        (await post('/v1/chat/completions', body, { 'x-gateway-metadata-customer-id': 'globex' })).status,
      ).to.equal(200);
      const scopes = (await adminGet(gw, '/api/budgets')).data.map((b: any) => b.scope).sort();
      expect(scopes).to.deep.equal(['customer_id=acme', 'customer_id=globex']);
      const refused = await post('/v1/chat/completions', body, acme);
      expect(refused.json.error.message)
        .to.include('daily budget')
        .and.include('for customer_id=acme in workspace default');
    });

    it("without max_tokens, and the cap not applied (max_tokens_when_absent: allow), the worst case is the model's maximum output", async () => {
      const bare = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
      const capped = reservation(bare, 100);
      const uncapped = reservation(bare, gpt4oMini.max_output_tokens);
      expect(uncapped > capped).to.equal(true);
      await start(
        `{ max_tokens: 100, max_tokens_when_absent: allow, budgets: [{ period: day, usd: "${usd(uncapped - 1n)}" }] }`,
      );
      const r = await post('/v1/chat/completions', bare);
      expect(r.status).to.equal(429);
      expect(r.json.error.message).to.include(`may cost up to $${trim(usd(uncapped))}`);
      expect((await post('/v1/chat/completions', { ...bare, max_tokens: 100 })).status).to.equal(200);
      expect(upstream.received).to.have.length(1);
    });

    it('n answers reserve n times the output', async () => {
      const three = { ...body, n: 3 };
      const two = { ...body, n: 2 };
      await start(`{ budgets: [{ period: day, usd: "${usd(reservation(two, 200))}" }] }`);
      const refused = await post('/v1/chat/completions', three);
      expect(refused.status).to.equal(429);
      expect(refused.json.error.message).to.include(`may cost up to $${trim(usd(reservation(three, 300)))}`);
      expect((await post('/v1/chat/completions', two)).status, 'exactly the limit fits').to.equal(200);
    });

    it("the input estimate stops at the model's context window (a large base64 image is bytes, not tokens)", async () => {
      const image = {
        ...body,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(600_000)}` } }],
          },
        ],
      };
      const worstCase = BigInt(gpt4oMini.context_window) * pico(gpt4oMini.input) + 100n * pico(gpt4oMini.output);
      expect(Math.ceil(Buffer.byteLength(JSON.stringify(image)) / 3)).to.be.greaterThan(gpt4oMini.context_window);
      await start(`{ budgets: [{ period: day, usd: "${usd(worstCase)}" }] }`);
      expect((await post('/v1/chat/completions', image)).status).to.equal(200);
    });

    it('GET /api/budgets on a fresh instance lists every budget with its spend, read back from the stores', async () => {
      const limits = `{ budgets: [{ period: day, usd: "1", alert_at: 0.5 }, { period: month, usd: "${usd(actual * 3n)}", alert_at: 0.5 }, { period: day, usd: "5", per_tag: customer_id }, { period: month, usd: "9", tag: { feature: search } }] }`;
      await start(limits);
      expect((await post('/v1/chat/completions', body, { 'x-gateway-metadata-customer-id': 'acme' })).status).to.equal(
        200,
      );
      expect(
        (await post('/v1/chat/completions', body, { 'x-gateway-metadata-customer-id': 'globex' })).status,
      ).to.equal(200);
      await waitForRecords(gw, 2);
      const dataDir = gw.dataDir;
      await gw.stop();
      // A new instance on the same usage store: it has reserved and settled nothing itself.
      gw = await startTestGateway(
        upstream.url,
        `${workspaceWith(limits)}\nstorage: { url: "sqlite:${dataDir}/tollgate.db" }`,
      );
      const budgets = (await adminGet(gw, '/api/budgets')).data;
      const view = budgets.map((b: any) => [b.period, b.scope, b.spent_usd, b.reserved_usd, b.alerted]);
      expect(view).to.have.deep.members([
        ['day', 'workspace', trim(usd(actual * 2n)), '0', false],
        ['month', 'workspace', trim(usd(actual * 2n)), '0', true],
        ['day', 'customer_id=acme', trim(usd(actual)), '0', false],
        ['day', 'customer_id=globex', trim(usd(actual)), '0', false],
        ['month', 'feature=search', '0', '0', false],
      ]);
      const day = budgets.find((b: any) => b.period === 'day' && b.scope === 'workspace');
      const start0 = new Date();
      start0.setUTCHours(0, 0, 0, 0);
      expect(day.period_start).to.equal(start0.toISOString());
      expect(Date.parse(day.period_end) - Date.parse(day.period_start)).to.equal(24 * 3600_000);
    });
  });

  describe('required tags', () => {
    it('refuses a request missing a required tag, naming it', async () => {
      await start('{ required_tags: [agent, feature] }');
      const r = await chat({}, { 'x-gateway-metadata-agent': 'bot' });
      expect(r.status).to.equal(400);
      expect(r.json.error.code).to.equal('required_tag_missing');
      expect(r.json.error.message).to.include('feature');
      expect(r.json.error.message).to.not.include('agent,');
      expect((await chat({}, { 'x-gateway-metadata': '{"agent":"bot","feature":"faq"}' })).status).to.equal(200);
      const records = await waitForRecords(gw, 2);
      expect(records.map((x) => x.error_code).sort()).to.deep.equal([null, 'required_tag_missing']);
    });

    it('or records it under an explicit "(untagged)" value', async () => {
      await start('{ required_tags: [agent], missing_tags: record_untagged }');
      expect((await chat()).status).to.equal(200);
      const [record] = await waitForRecords(gw, 1);
      expect(record.tags).to.deep.equal({ agent: '(untagged)' });
      const usage = await adminGet(gw, '/api/usage?group_by=agent');
      expect(usage.rows.map((r: any) => r.group.agent)).to.deep.equal(['(untagged)']);
    });
  });
});
