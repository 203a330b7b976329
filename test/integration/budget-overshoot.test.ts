import { expect } from 'chai';
import { settledBudget } from '../helpers/admin';
import { fixtureBytes, PROJECT_ROOT } from '../helpers/fixtures';
import { startTestGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { sseChunks, TestUpstream } from '../helpers/upstream';

const REDIS_URL = process.env.REDIS_URL;

/**
 * Budgets hold when the input lives elsewhere. 60 concurrent Responses streams from the official openai SDK, each
 * continuing a stored response (previous_response_id): the body is ~150 bytes, but the provider bills 100,000
 * input tokens for each (the recorded responses stream, its usage raised to 100,000 input tokens and its model set
 * to the one asked for). The budget is small; what it spends must stay within the bound docs/limits.md gives.
 */
describe('budget overshoot with referenced context', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  const INPUT = 100_000;
  const OUTPUT = 5; // the recorded stream's output tokens
  const MAX_OUTPUT = 100;

  const catalog = require(`${PROJECT_ROOT}/pricing/catalog.json`);
  const mini = catalog.models.find((m: any) => m.provider === 'openai' && m.model === 'gpt-4o-mini');
  const pico = (usdPerMillion: string) => {
    const [w, f = ''] = usdPerMillion.split('.');
    return BigInt(w + f.padEnd(6, '0')); // USD per 1M tokens = pico-USD per token
  };
  const inputPrice = pico(mini.input);
  const outputPrice = pico(mini.output);
  const actual = BigInt(INPUT) * inputPrice + BigInt(OUTPUT) * outputPrice;
  const LIMIT = 100_000_000_000n; // $0.10
  const usd = (p: bigint) =>
    `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`.replace(/0+$/, '').replace(/\.$/, '');

  before(async () => {
    await upstream.start();
    expect(mini.context_window).to.equal(128_000);
  });
  after(() => upstream.stop());
  beforeEach(() => {
    const text = fixtureBytes('openai/responses_stream.sse')
      .toString('utf8')
      .replace('"input_tokens":11', `"input_tokens":${INPUT}`)
      .replace('"total_tokens":16', `"total_tokens":${INPUT + OUTPUT}`)
      .replaceAll('"model":"gpt-5.5-2026-04-23"', '"model":"gpt-4o-mini"');
    upstream.respondWith(() => ({
      headers: { 'content-type': 'text/event-stream' },
      body: sseChunks(Buffer.from(text)),
      delayMs: 300,
    }));
  });
  afterEach(async () => {
    await gw?.stop();
    upstream.reset();
  });

  const start = (store: string, floor = '') =>
    startTestGateway(
      upstream.url,
      `${store}
${floor}
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits: { budgets: [{ period: day, usd: "${usd(LIMIT)}" }] }
`,
    ).then((g) => (gw = g));

  /** 60 streams at once; the outcomes, then the budget once every request has settled. */
  async function sixtyStreams(): Promise<{ ok: number; refused: number; spent: bigint }> {
    const client = openaiClient(gw);
    const one = async (): Promise<string> => {
      try {
        const s = await client.responses.create({
          model: 'gpt-4o-mini',
          input: 'and then?',
          previous_response_id: 'resp_0123456789abcdef',
          max_output_tokens: MAX_OUTPUT,
          stream: true,
        });
        for await (const event of s) void event;
        return 'ok';
      } catch (err) {
        return String((err as { code?: string }).code);
      }
    };
    const outcomes = await Promise.all(Array.from({ length: 60 }, one));
    for (const o of outcomes) expect(o).to.be.oneOf(['ok', 'budget_exceeded']);
    const budget = await settledBudget(gw);
    const [w, f = ''] = String(budget.spent_usd).split('.');
    return {
      ok: outcomes.filter((o) => o === 'ok').length,
      refused: outcomes.filter((o) => o !== 'ok').length,
      spent: BigInt(w + f.padEnd(12, '0')),
    };
  }

  const stores: [string, string][] = [['memory', '']];
  if (REDIS_URL)
    stores.push([
      'Redis',
      `limit_store: { redis_url: "${REDIS_URL}", key_prefix: "tollgate-test:overshoot:${process.pid}:${Date.now()}:" }`,
    ]);
  for (const [name, store] of stores) {
    it(`${name}: the default floor (the context window) admits only what the budget covers; no overshoot`, async () => {
      await start(store);
      // Each stream reserves the whole context window as input plus its max_output_tokens.
      const reservation = 128_000n * inputPrice + BigInt(MAX_OUTPUT) * outputPrice;
      const fits = Number(LIMIT / reservation);
      const r = await sixtyStreams();
      expect(r.ok).to.equal(fits);
      expect(r.refused).to.equal(60 - fits);
      expect(r.spent).to.equal(BigInt(fits) * actual);
      expect(r.spent <= LIMIT, `spent $${usd(r.spent)} of $${usd(LIMIT)}`).to.equal(true);
    });
  }

  it('a smaller floor overshoots by at most (admitted) x (context window - floor) x input price', async () => {
    const floor = 20_000;
    await start('', `budgets: { referenced_input_tokens: ${floor} }`);
    const reservation = BigInt(floor) * inputPrice + BigInt(MAX_OUTPUT) * outputPrice;
    const fits = Number(LIMIT / reservation);
    const r = await sixtyStreams();
    expect(r.ok).to.equal(fits);
    expect(r.spent).to.equal(BigInt(fits) * actual);
    const bound = BigInt(fits) * BigInt(128_000 - floor) * inputPrice;
    expect(r.spent - LIMIT > 0n, 'this floor is below the real input: it does overshoot').to.equal(true);
    expect(r.spent - LIMIT <= bound, `overshoot $${usd(r.spent - LIMIT)}, bound $${usd(bound)}`).to.equal(true);
  });
});
