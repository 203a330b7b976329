/**
 * OpenRouter reconciled record by record: requests sent through a running gateway with the official `openai` SDK to a
 * loopback OpenRouter answering with its recorded chat completion (each with a generation id of its own), then each
 * record looked up on a loopback generation API answering with OpenRouter's recorded generation body
 * (test/fixtures/openrouter/generation_recorded.json, SOURCES.md), its id, model and total_cost the generation's own.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { runReconciliation } from '../../reconcile/run';
import { adminGet, waitForRecords } from '../helpers/admin';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { generationReply, jsonReply } from '../helpers/provider-admin-api';
import { OPENAI_KEY, startTestGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const DAY = 24 * 3600 * 1000;
const ROUTER_KEY = 'sk-or-v1-PLANTED-SECRET-reconcile-0042';
const ANSWER = 'openrouter/chat_completion_anthropic_cache_write.json';
/** What the recorded answer's usage.cost says the request cost: what the gateway records. */
const RECORDED_COST = '0.01355025';

/** The recorded answer's usage: prompt_tokens (3 uncached + 3211 cache writes), completion_tokens, cached_tokens. */
const RECORDED_TOKENS = { prompt: 3214, completion: 100, cached: 0 };

/**
 * OpenRouter's figure per generation and its native token counts: the same; a different cost (charged later at
 * another rate); the same cost over other counts (the provider counted 14 prompt tokens fewer); unknown (404).
 */
const BILLED: Record<string, { cost: number; tokens: typeof RECORDED_TOKENS } | null> = {
  'gen-1773011155-agree': { cost: 0.01355025, tokens: RECORDED_TOKENS },
  'gen-1773011155-other': { cost: 0.0162603, tokens: RECORDED_TOKENS },
  'gen-1773011155-tokens': { cost: 0.01355025, tokens: { ...RECORDED_TOKENS, prompt: 3200 } },
  'gen-1773011155-unknown': null,
};
const GENERATIONS = Object.keys(BILLED);

describe('reconciliation: OpenRouter, each record against its generation', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  const lookups: { id: string | null; auth: string | undefined }[] = [];
  let rateLimitedOnce = false;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url);
    const recorded = fixtureJson(ANSWER);
    let next = 0;
    upstream.respondWith((req) => {
      const url = new URL(req.url, 'http://x');
      if (url.pathname === '/openrouter-api/v1/generation') {
        const id = url.searchParams.get('id');
        lookups.push({ id, auth: req.headers.authorization });
        // The first lookup is rate limited: waited out after its Retry-After, then asked again.
        if (!rateLimitedOnce) {
          rateLimitedOnce = true;
          return jsonReply(fixtureJson('openrouter/error_429_upstream_rate_limited.json'), 429, { 'retry-after': '0' });
        }
        return generationReply(id ?? '', recorded.model, BILLED[id ?? ''] ?? null);
      }
      if (req.mount !== 'openrouter') return undefined;
      const id = GENERATIONS[next++ % GENERATIONS.length];
      return jsonReply(Buffer.from(fixtureBytes(ANSWER).toString('utf8').replace(recorded.id, id)));
    });
    const client = new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, 'X-Gateway-Provider': 'openrouter' },
    });
    for (const generation of GENERATIONS) {
      const answer = await client.chat.completions.create({
        model: 'anthropic/claude-sonnet-4.6',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(answer.id).to.equal(generation);
    }
    await waitForRecords(gw, GENERATIONS.length);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('keeps each answer’s generation id on its record', async () => {
    const { data } = await adminGet(gw, '/api/requests?limit=10');
    expect(data.map((r: any) => [r.generation_id, r.cost_usd, r.price_version]).sort()).to.deep.equal(
      GENERATIONS.map((id) => [id, RECORDED_COST, 'provider-reported']),
    );
  });

  it('looks each record up by its generation id and says which agree, which differ in cost or tokens and which OpenRouter does not know', async () => {
    const store = gw.gateway.store;
    const today = Math.floor(Date.now() / DAY) * DAY;
    const range = { from: today - DAY, to: today + DAY };
    const outcome = await runReconciliation(
      {
        queryUsage: (q) => store.queryUsage(q),
        listRequests: (q) => store.listRequests(q),
        runs: store.reconciliationRuns!(),
        now: () => range.to + 8 * DAY,
      },
      { kind: 'openrouter', baseUrl: `${upstream.url}/openrouter-api/v1`, adminKey: ROUTER_KEY },
      range,
      { provider: 'openrouter', tolerance: '0.005', restateDays: 7, scopes: {} },
    );
    expect(outcome.error).to.equal(null);
    const report = outcome.report!;
    const records = (await adminGet(gw, '/api/requests?limit=10')).data;
    const recordOf = (generation: string) => records.find((r: any) => r.generation_id === generation).id;
    expect(report.generations).to.deep.equal({
      checked: 4,
      matched: 1,
      differing: 1,
      tokens_differing: 1,
      missing: 1,
      without_id: 0,
      lines: (
        [
          ['gen-1773011155-other', '0.0162603', 'cost_differs', RECORDED_TOKENS],
          ['gen-1773011155-tokens', RECORDED_COST, 'tokens_differ', { ...RECORDED_TOKENS, prompt: 3200 }],
          ['gen-1773011155-unknown', null, 'missing', null],
        ] as const
      )
        .map(([generation, billed, status, tokens]) => ({
          record_id: recordOf(generation),
          generation_id: generation,
          day: report.lines[0].day,
          model: fixtureJson(ANSWER).model,
          gateway_usd: RECORDED_COST,
          provider_usd: billed,
          status,
          gateway_tokens: RECORDED_TOKENS,
          provider_tokens: tokens,
        }))
        .sort(
          (a, b) =>
            records.findIndex((r: any) => r.id === a.record_id) - records.findIndex((r: any) => r.id === b.record_id),
        ),
    });
    // The day's line: four records at 0.01355025 against the three OpenRouter billed, with their native tokens:
    // OpenRouter counted fewer (one generation unknown, one 14 prompt tokens short), so the line drifts.
    expect(report.totals).to.deep.include({ gateway_usd: '0.054201', provider_usd: '0.0433608' });
    expect(report.lines.map((l) => [l.status, l.provider?.tokens])).to.deep.equal([
      ['drift', { input: 3 * 3214 - 14, cacheRead: 0, cacheWrite: 0, output: 300 }],
    ]);
    // Each generation once, and the rate-limited one again; the key only in their Authorization header.
    expect(lookups.map((l) => l.id).sort()).to.deep.equal([...GENERATIONS, lookups[0].id].sort());
    expect(new Set(lookups.map((l) => l.auth))).to.deep.equal(new Set([`Bearer ${ROUTER_KEY}`]));
    expect(outcome.pages).to.deep.equal({ generation: 4 });
    const stored = await adminGet(gw, `/api/reconciliation?run=${outcome.id}`);
    expect(stored.report.generations).to.deep.equal(report.generations);
    expect(JSON.stringify(stored)).to.not.include(ROUTER_KEY);
  });
});
