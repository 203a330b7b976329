import { expect } from 'chai';
import { settledBudget } from '../helpers/admin';
import { boundedChatAnswer } from '../helpers/bounded-answer';
import { startTestGateway, type TestGateway, openaiClient } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const REDIS_URL = process.env.REDIS_URL;
const LIMIT_USD = '0.01';
const LIMIT = 10_000_000_000n; // pico-USD
const ASKED = 4000;
const MIN_OUTPUT = 50;
const PROMPT_TOKENS = 20;

const picoOf = (usd: string) => {
  const [w, f = ''] = usd.split('.');
  return BigInt(w + f.padEnd(12, '0'));
};

/**
 * on_exceed clamp: a request that does not fit has its output-token limit lowered to what the budget has left.
 * The provider answers with as many output tokens as the request allowed (bounded-answer.ts), the worst case the
 * reservation covers. Many requests at once,
 * on the memory store and on Redis: some pass whole, some are clamped, the rest refused, and the spend never
 * passes the limit.
 */
describe('budget on_exceed clamp', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway | undefined;
  /** The output-token limit each request reached the provider with. */
  let sentLimits: number[] = [];

  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() => {
    sentLimits = [];
    upstream.respondWith(boundedChatAnswer(PROMPT_TOKENS, (limit) => sentLimits.push(limit)));
  });
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    upstream.reset();
  });

  const start = (store: string, usd = LIMIT_USD, more = '') =>
    startTestGateway(
      upstream.url,
      `${store}
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits:
      budgets: [{ period: day, usd: "${usd}", action: clamp, min_output_tokens: ${MIN_OUTPUT} }${more}]
`,
    ).then((g) => (gw = g));

  /** One request; its outcome: "full", the clamped limit the header names, or the error code. */
  async function one(g: TestGateway): Promise<string | number> {
    const client = openaiClient(g);
    try {
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], max_completion_tokens: ASKED })
        .withResponse();
      const clamped = response.headers.get('x-gateway-budget-clamped');
      return clamped === null ? 'full' : Number(clamped);
    } catch (err) {
      return String((err as { code?: string }).code);
    }
  }

  async function settledSpend(g: TestGateway): Promise<bigint> {
    const budget = await settledBudget(g);
    expect(budget.action).to.equal('clamp');
    return picoOf(budget.spent_usd);
  }

  const stores: [string, string][] = [['memory', '']];
  if (REDIS_URL)
    stores.push([
      'Redis',
      `limit_store: { redis_url: "${REDIS_URL}", key_prefix: "tollgate-test:clamp:${process.pid}:${Date.now()}:" }`,
    ]);
  for (const [name, store] of stores) {
    it(`${name}: 60 requests at once are passed whole, clamped or refused; the spend stays within the limit`, async () => {
      const g = await start(store);
      const outcomes = await Promise.all(Array.from({ length: 60 }, () => one(g)));
      const full = outcomes.filter((o) => o === 'full').length;
      const clamped = outcomes.filter((o): o is number => typeof o === 'number');
      const refused = outcomes.filter((o) => o === 'budget_exceeded').length;
      expect(full + clamped.length + refused, JSON.stringify(outcomes)).to.equal(60);
      // $0.01 covers four whole answers of 4,000 output tokens; what is left then is clamped.
      expect(full).to.equal(4);
      expect(clamped.length).to.be.at.least(1);
      for (const c of clamped) expect(c).to.be.within(MIN_OUTPUT, ASKED - 1);
      // The provider received each clamped limit, in the field the client named.
      expect(sentLimits.filter((l) => l !== ASKED).sort()).to.deep.equal(clamped.map(Number).sort());
      const spent = await settledSpend(g);
      expect(spent > 0n && spent <= LIMIT, `spent ${spent} of ${LIMIT} pico-USD`).to.equal(true);
      // What is left cannot cover the minimum output: the next request is refused, not clamped below it.
      expect(await one(g)).to.equal('budget_exceeded');
      expect(await settledSpend(g)).to.equal(spent);
    });
  }

  it('a request that names no output limit gets the provider field written at the clamp', async () => {
    const g = await start('', '0.005');
    const client = openaiClient(g);
    // gpt-4o-mini's catalog maximum output (16,384 tokens, ~$0.0098) does not fit $0.005: the request is clamped.
    const { response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    const clamped = Number(response.headers.get('x-gateway-budget-clamped'));
    expect(clamped).to.be.within(MIN_OUTPUT, 16_383);
    expect(sentLimits).to.deep.equal([clamped]);
    expect((await settledSpend(g)) <= LIMIT / 2n).to.equal(true);
  });

  it('a blocking budget the request does not fit refuses it, whatever a clamp budget beside it would allow', async () => {
    const g = await start('', LIMIT_USD, ', { period: day, usd: "0.001", key: test }');
    expect(await one(g)).to.equal('budget_exceeded');
    expect(sentLimits, 'nothing reached the provider').to.deep.equal([]);
  });
});
