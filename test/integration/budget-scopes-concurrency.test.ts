import { expect } from 'chai';
import { request } from 'undici';
import { adminGet } from '../helpers/admin';
import { GPT_4O_MINI, picoPerToken } from '../helpers/answer-cost';
import { boundedChatAnswer } from '../helpers/bounded-answer';
import { OPENAI_KEY, startTestGateway, TEST_GATEWAY_KEY, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

const REDIS_URL = process.env.REDIS_URL;
const BIG_KEY = 'tg_test_key_with_an_override_budget_0000000002';
const TAGGED_KEY = 'tg_test_key_of_the_tagged_workspace_00000000003';
const PROMPT_TOKENS = 10;
const MAX_TOKENS = 1000;
const AT_ONCE = 30;

/**
 * Per-key and per-value budgets with overrides hold under concurrency: 30 requests at once on each of four budget
 * instances (two gateway keys, one with an override; two customer_id values, one with an override), 120 in all,
 * on the memory store and on Redis. Each instance admits exactly what its limit covers at the worst case, and its
 * spend stays within its own limit. The provider keeps to the request's limits (bounded-answer.ts).
 */
describe('per-key and per-value override budgets under concurrency', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway | undefined;
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: MAX_TOKENS,
  });
  const input = picoPerToken(GPT_4O_MINI.input);
  const output = picoPerToken(GPT_4O_MINI.output);
  const worst = BigInt(Math.ceil(Buffer.byteLength(body) / 3)) * input + BigInt(MAX_TOKENS) * output;
  const actual = BigInt(PROMPT_TOKENS) * input + BigInt(MAX_TOKENS) * output;
  // Room for 5 worst cases (12 with the override), and a little more that fits no sixth.
  const small = worst * 5n + worst / 2n;
  const big = worst * 12n + worst / 2n;
  const usd = (p: bigint) => `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`;
  const pico = (s: string) => {
    const [w, f = ''] = s.split('.');
    return BigInt(w + f.padEnd(12, '0'));
  };

  before(async () => {
    await upstream.start();
    upstream.respondWith(boundedChatAnswer(PROMPT_TOKENS));
  });
  after(() => upstream.stop());
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });

  const start = (store: string) =>
    startTestGateway(
      upstream.url,
      `${store}
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }, { id: big, key: "\${BIG_KEY}" }]
    limits: { budgets: [{ period: day, usd: "${usd(small)}", per_key: true, overrides: { big: "${usd(big)}" } }] }
  - id: tagged
    keys: [{ id: tagged, key: "\${TAGGED_KEY}" }]
    limits: { budgets: [{ period: day, usd: "${usd(small)}", per_tag: customer_id, overrides: { acme: "${usd(big)}" } }] }
`,
      { BIG_KEY, TAGGED_KEY },
    ).then((g) => (gw = g));

  const chat = async (g: TestGateway, key: string, customer?: string): Promise<number> => {
    const res = await request(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-key': key,
        authorization: `Bearer ${OPENAI_KEY}`,
        ...(customer ? { 'x-gateway-metadata-customer-id': customer } : {}),
      },
      body,
    });
    await res.body.text();
    return res.statusCode;
  };

  const stores: [string, string][] = [['memory', '']];
  if (REDIS_URL)
    stores.push([
      'Redis',
      `limit_store: { redis_url: "${REDIS_URL}", key_prefix: "tollgate-test:scopes:${process.pid}:${Date.now()}:" }`,
    ]);
  for (const [name, store] of stores) {
    it(`${name}: each key and each tag value admits what its own limit covers, and spends within it`, async () => {
      const g = await start(store);
      const senders: [string, () => Promise<number>][] = [
        ['key_id=test', () => chat(g, TEST_GATEWAY_KEY)],
        ['key_id=big', () => chat(g, BIG_KEY)],
        ['customer_id=globex', () => chat(g, TAGGED_KEY, 'globex')],
        ['customer_id=acme', () => chat(g, TAGGED_KEY, 'acme')],
      ];
      const outcomes = await Promise.all(
        senders.map(
          async ([scope, send]) => [scope, await Promise.all(Array.from({ length: AT_ONCE }, send))] as const,
        ),
      );
      const admitted = Object.fromEntries(
        outcomes.map(([scope, statuses]) => {
          for (const s of statuses) expect(s, scope).to.be.oneOf([200, 429]);
          return [scope, statuses.filter((s) => s === 200).length];
        }),
      );
      expect(admitted).to.deep.equal({
        'key_id=test': 5,
        'key_id=big': 12,
        'customer_id=globex': 5,
        'customer_id=acme': 12,
      });
      let budgets: any[] = [];
      await waitFor(
        async () => {
          budgets = (await adminGet(g, '/api/budgets')).data;
          return budgets.length === 4 && budgets.every((b) => b.reserved_usd === '0');
        },
        5000,
        'every reservation settled',
      );
      for (const b of budgets) {
        const limit = b.scope.endsWith('=big') || b.scope.endsWith('=acme') ? big : small;
        expect(pico(b.limit_usd), b.scope).to.equal(limit);
        expect(pico(b.spent_usd), b.scope).to.equal(BigInt(admitted[b.scope]) * actual);
        expect(pico(b.spent_usd) <= limit, `${b.scope}: spent ${b.spent_usd} of ${b.limit_usd}`).to.equal(true);
      }
    });
  }
});
