import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { request } from 'undici';
import { fixtureBytes, fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, TEST_ADMIN_TOKEN, type TestGateway } from '../helpers/gateway';
import { requirePostgres } from '../helpers/services';
import { TestUpstream } from '../helpers/upstream';

/**
 * End to end: tagged requests through the official SDKs, then the admin API grouped by every dimension must
 * return exactly the counts, tokens and costs computed here, independently, from the recorded fixtures and the
 * catalog's price strings.
 */

// ---- independent expectations -------------------------------------------------------------------------

/** Catalog price (USD per 1M tokens, decimal string) -> pico-USD per token, by string arithmetic. */
function picoPerToken(price: string): bigint {
  const [whole, frac = ''] = price.split('.');
  if (frac.length > 6) throw new Error('test helper handles at most 6 decimals');
  return BigInt(whole + frac.padEnd(6, '0'));
}

const catalog: {
  models: {
    provider: string;
    model: string;
    input?: string;
    output?: string;
    cache_read?: string;
    cache_write?: string;
  }[];
} = require(`${PROJECT_ROOT}/pricing/catalog.json`);
function price(provider: string, model: string) {
  const p = catalog.models.find((m) => m.provider === provider && m.model === model);
  if (!p) throw new Error(`no catalog price for ${provider}/${model}`);
  return p;
}

interface Expected {
  tags: Record<string, string>;
  provider: string;
  /** The model that served (dimension `model`). */
  model: string;
  /** The model asked for (dimension `requested_model`), when it is not the one that served. */
  requested?: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** null = unknown (unpriced / not counted), bigint = exact cost. */
  cost: bigint | null;
  status: number;
}

/** Usage of the last SSE `data:` line carrying a non-null "usage" (chat completions with include_usage). */
function lastStreamUsage(file: string): any {
  const lines = fixtureBytes(file)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('data: {') && l.includes('"usage":{'));
  return JSON.parse(lines.at(-1)!.slice(6)).usage;
}

function tokenCost(
  provider: string,
  model: string,
  u: { input: number; output: number; cacheRead: number; cacheWrite: number },
): bigint {
  const p = price(provider, model);
  return (
    BigInt(u.input) * picoPerToken(p.input!) +
    BigInt(u.output) * picoPerToken(p.output!) +
    BigInt(u.cacheRead) * picoPerToken(p.cache_read ?? p.input!) +
    BigInt(u.cacheWrite) * picoPerToken(p.cache_write ?? p.input!)
  );
}

function expectChatJson(tags: Record<string, string>): Expected {
  const u = fixtureJson('openai/chat_completion_cached_tokens.json').usage;
  const cached = u.prompt_tokens_details.cached_tokens;
  const t = { input: u.prompt_tokens - cached, output: u.completion_tokens, cacheRead: cached, cacheWrite: 0 };
  return {
    tags,
    provider: 'openai',
    model: 'gpt-4o-mini',
    ...t,
    cost: tokenCost('openai', 'gpt-4o-mini', t),
    status: 200,
  };
}

function expectChatStream(tags: Record<string, string>): Expected {
  const u = lastStreamUsage('openai/chat_stream_with_usage.sse');
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  const t = { input: u.prompt_tokens - cached, output: u.completion_tokens, cacheRead: cached, cacheWrite: 0 };
  return {
    tags,
    provider: 'openai',
    model: 'gpt-4o-mini',
    ...t,
    cost: tokenCost('openai', 'gpt-4o-mini', t),
    status: 200,
  };
}

function expectMessages(tags: Record<string, string>): Expected {
  const u = fixtureJson('anthropic/messages_basic.json').usage;
  const t = {
    input: u.input_tokens,
    output: u.output_tokens,
    cacheRead: u.cache_read_input_tokens ?? 0,
    cacheWrite: u.cache_creation_input_tokens ?? 0,
  };
  return {
    tags,
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    ...t,
    cost: tokenCost('anthropic', 'claude-sonnet-4-5', t),
    status: 200,
  };
}

function expectResponses(tags: Record<string, string>): Expected {
  const u = fixtureJson('openai/responses.json').usage;
  const cached = u.input_tokens_details.cached_tokens;
  const t = { input: u.input_tokens - cached, output: u.output_tokens, cacheRead: cached, cacheWrite: 0 };
  return { tags, provider: 'openai', model: 'gpt-5.4', ...t, cost: tokenCost('openai', 'gpt-5.4', t), status: 200 };
}

function expectEmbeddings(tags: Record<string, string>): Expected {
  const u = fixtureJson('openai/embeddings_float_reformatted.json').usage;
  const t = { input: u.prompt_tokens, output: 0, cacheRead: 0, cacheWrite: 0 };
  return {
    tags,
    provider: 'openai',
    model: 'text-embedding-3-small',
    ...t,
    output: 0,
    cost: tokenCost('openai', 'text-embedding-3-small', t),
    status: 200,
  };
}

function expectOpenRouter(tags: Record<string, string>): Expected {
  const body = fixtureJson('openrouter/chat_completion_anthropic_cache_write.json');
  const u = body.usage;
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  const written = u.prompt_tokens_details?.cache_write_tokens ?? 0;
  // The aggregator's own reported cost wins (usage.cost), converted exactly from its decimal text.
  const [w, f = ''] = String(u.cost).split('.');
  const cost = BigInt(w + f.padEnd(12, '0').slice(0, 12));
  // Attributed to the model that actually served (the response's `model`), with the requested one apart.
  return {
    tags,
    provider: 'openrouter',
    model: body.model,
    requested: 'anthropic/claude-sonnet-4.5',
    input: u.prompt_tokens - cached - written,
    output: u.completion_tokens,
    cacheRead: cached,
    cacheWrite: written,
    cost,
    status: 200,
  };
}

// ---- the test --------------------------------------------------------------------------------------------

const pgSchema = `tg_e2e_${process.pid}_${Date.now()}`;
let pgUrl: string | undefined;
/** Each backend's store: SQLite always; PostgreSQL from DATABASE_URL (helpers/services.ts: skipped, or failed in CI, without it). */
const backends: {
  name: string;
  storageYaml: (ctx: Mocha.Context) => Promise<string>;
  cleanup?: () => Promise<void>;
}[] = [
  { name: 'SQLite', storageYaml: async () => '' },
  {
    name: 'PostgreSQL',
    storageYaml: async (ctx) => {
      pgUrl = await requirePostgres(ctx, 'usage recording end to end on PostgreSQL');
      return `storage: { url: "${pgUrl}", schema: ${pgSchema} }`;
    },
    cleanup: async () => {
      if (!pgUrl) return;
      const { Client } = await import('pg');
      const c = new Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
      await c.end();
    },
  },
];

for (const backend of backends)
  describe(`usage recording and attribution, end to end (${backend.name})`, () => {
    const upstream = new TestUpstream();
    let gw: TestGateway;
    const sent: Expected[] = [];

    const admin = async (path: string) => {
      const res = await request(`${gw.adminUrl}${path}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(res.statusCode, path).to.equal(200);
      return (await res.body.json()) as any;
    };

    const openai = (tags: Record<string, string>, extra: Record<string, string> = {}) =>
      new OpenAI({
        apiKey: OPENAI_KEY,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: { 'X-Gateway-Key': gw.key, 'X-Gateway-Metadata': JSON.stringify(tags), ...extra },
      });
    const anthropic = (tags: Record<string, string>) =>
      new Anthropic({
        apiKey: ANTHROPIC_KEY,
        baseURL: gw.url,
        maxRetries: 0,
        defaultHeaders: { 'X-Gateway-Key': gw.key, 'X-Gateway-Metadata': JSON.stringify(tags) },
      });

    before(async function () {
      const storage = await backend.storageYaml(this);
      await upstream.start();
      gw = await startTestGateway(upstream.url, storage);

      const t1 = { agent: 'support-bot', feature: 'triage', customer_id: 'acme' };
      const t2 = { agent: 'search-agent', customer_id: 'globex' };
      const t3 = { agent: 'support-bot', feature: 'summarise' };
      const msg = [{ role: 'user' as const, content: 'hi' }];

      for (let i = 0; i < 3; i++) {
        const r = await openai(t1).chat.completions.create({ model: 'gpt-4o-mini', messages: msg });
        expect(r.id).to.be.a('string');
        sent.push(expectChatJson(t1));
      }
      for (let i = 0; i < 2; i++) {
        const s = await openai(t2).chat.completions.create({
          model: 'gpt-4o-mini',
          messages: msg,
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const _ of s);
        sent.push(expectChatStream(t2));
      }
      for (let i = 0; i < 2; i++) {
        await anthropic(t3).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: msg });
        sent.push(expectMessages(t3));
      }
      await openai(t1).responses.create({ model: 'gpt-5.4', input: 'hello' });
      sent.push(expectResponses(t1));
      await openai({}).embeddings.create({ model: 'text-embedding-3-small', input: 'hello' });
      sent.push(expectEmbeddings({}));
      await openai(t2, { 'X-Gateway-Provider': 'openrouter' }).chat.completions.create({
        model: 'anthropic/claude-sonnet-4.5',
        messages: msg,
      });
      sent.push(expectOpenRouter(t2));

      // Speech by tts-1 is billed per character of its input: 2 characters at $0.000015 (pricing/media-prices.json).
      const speech = await openai(t3).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hi' });
      await speech.arrayBuffer();
      sent.push({
        tags: t3,
        provider: 'openai',
        model: 'tts-1',
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        cost: 2n * 15_000_000n,
        status: 200,
      });

      // An upstream error is recorded with its status and zero cost.
      upstream.respondWith(() => ({
        status: 429,
        headers: { 'content-type': 'application/json' },
        body: fixtureBytes('openrouter/error_429_upstream_rate_limited.json'),
      }));
      await openai(t2)
        .chat.completions.create({ model: 'gpt-4o-mini', messages: msg })
        .catch((e) => expect(e.status).to.equal(429));
      upstream.reset();
      sent.push({
        tags: t2,
        provider: 'openai',
        model: 'gpt-4o-mini',
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        cost: 0n,
        status: 429,
      });

      // Wait until the batched writer stored every record.
      for (let i = 0; i < 200; i++) {
        const total = (await admin('/api/usage')).total;
        if (total?.requests === sent.length) break;
        await new Promise((r) => setTimeout(r, 25));
      }
    });

    after(async () => {
      await gw?.stop();
      await upstream.stop();
      await backend.cleanup?.();
    });

    const dimensionOf = (e: Expected, dim: string): string => {
      if (dim === 'provider') return e.provider;
      if (dim === 'model') return e.model;
      if (dim === 'requested_model') return e.requested ?? e.model;
      return e.tags[dim] ?? '(untagged)';
    };

    for (const dim of ['agent', 'feature', 'customer_id', 'provider', 'model', 'requested_model']) {
      it(`GET /api/usage?group_by=${dim} matches the independently computed figures`, async () => {
        const body = await admin(`/api/usage?group_by=${dim}`);
        const expected = new Map<
          string,
          { requests: number; input: number; output: number; cacheRead: number; cost: bigint }
        >();
        for (const e of sent) {
          const k = dimensionOf(e, dim);
          const g = expected.get(k) ?? { requests: 0, input: 0, output: 0, cacheRead: 0, cost: 0n };
          g.requests++;
          g.input += e.input;
          g.output += e.output;
          g.cacheRead += e.cacheRead;
          g.cost += e.cost ?? 0n;
          expected.set(k, g);
        }
        const actual = new Map<string, any>(body.rows.map((r: any) => [r.group[dim], r]));
        expect([...actual.keys()].sort()).to.deep.equal([...expected.keys()].sort());
        for (const [k, g] of expected) {
          const row = actual.get(k);
          expect(row.requests, `${dim}=${k} requests`).to.equal(g.requests);
          expect(row.input_tokens, `${dim}=${k} input`).to.equal(g.input);
          expect(row.output_tokens, `${dim}=${k} output`).to.equal(g.output);
          expect(row.cache_read_tokens, `${dim}=${k} cache read`).to.equal(g.cacheRead);
          expect(row.cost_pico, `${dim}=${k} cost`).to.equal(g.cost.toString());
        }
        // Every grouping reconciles exactly with the total: nothing is counted twice.
        const sum = body.rows.reduce((s: bigint, r: any) => s + BigInt(r.cost_pico), 0n);
        expect(sum.toString()).to.equal(body.total.cost_pico);
        expect(body.rows.reduce((s: number, r: any) => s + r.requests, 0)).to.equal(body.total.requests);
      });
    }

    it('filters stack with group_by (customer_id=acme, grouped by feature)', async () => {
      const body = await admin('/api/usage?group_by=feature&filter[customer_id]=acme');
      const acme = sent.filter((e) => e.tags.customer_id === 'acme');
      expect(body.total.requests).to.equal(acme.length);
      expect(body.rows.map((r: any) => r.group.feature)).to.deep.equal(['triage']);
    });

    it('lists raw records with tags, cost provenance and no secrets', async () => {
      const body = await admin('/api/requests?limit=100');
      expect(body.data).to.have.length(sent.length);
      // tts-1 is billed per character of its input: "hi" is 2 characters at $0.000015.
      const speech = body.data.find((r: any) => r.model === 'tts-1');
      expect(speech.provenance).to.equal('measured');
      expect(speech.cost_usd).to.equal('0.00003');
      expect((await admin('/api/usage')).total.unpriced_count).to.equal(0);
      const failed = body.data.find((r: any) => r.status === 429);
      expect(failed.provenance).to.equal('failed');
      expect(failed.error_code).to.equal('upstream_429');
      expect(failed.cost_pico).to.equal('0');
      const routed = body.data.find((r: any) => r.provider === 'openrouter');
      expect(routed.served_model).to.equal(fixtureJson('openrouter/chat_completion_anthropic_cache_write.json').model);
      const text = JSON.stringify(body);
      for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, gw.key]) expect(text).to.not.include(secret);
    });

    it('sends the cost of a non-streamed answer in x-gateway-cost, body unchanged', async () => {
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-key': gw.key, authorization: `Bearer ${OPENAI_KEY}` },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      });
      const body = Buffer.from(await res.body.arrayBuffer());
      expect(body.equals(fixtureBytes('openai/chat_completion_cached_tokens.json'))).to.equal(true);
      const cost = expectChatJson({}).cost!;
      const usd = `${cost / 1_000_000_000_000n}.${(cost % 1_000_000_000_000n).toString().padStart(12, '0')}`
        .replace(/0+$/, '')
        .replace(/\.$/, '');
      expect(res.headers['x-gateway-cost']).to.equal(usd);
    });

    it('refuses the admin API without the admin token, and it is not on the proxy port', async () => {
      const none = await request(`${gw.adminUrl}/api/usage`);
      expect(none.statusCode).to.equal(401);
      await none.body.text();
      const wrong = await request(`${gw.adminUrl}/api/usage`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.statusCode).to.equal(401);
      await wrong.body.text();
      const onProxy = await request(`${gw.url}/api/usage`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'x-gateway-key': gw.key },
      });
      expect(onProxy.statusCode).to.equal(404);
      await onProxy.body.text();
    });
  });
