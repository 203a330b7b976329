import { expect } from 'chai';
import { request } from 'undici';
import { cachedAnswerCost } from '../helpers/answer-cost';
import { OPENAI_KEY, useGateway, type TestGateway } from '../helpers/gateway';
import { samplesOf, scrape } from '../helpers/prometheus';
import { TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

// The cost of one answer of the test upstream, by hand from the catalog; budgets in multiples of it.
const ONE = cachedAnswerCost();
const usdText = (p: bigint) => `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`;
const usd = (p: bigint) => Number(p) / 1e12;

describe('budget gauges on /metrics: spent, limit and forecast', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(
    upstream,
    (g) => (gw = g),
    `
metrics: { budgets_max: 2 }
alerts:
  evaluate_every_ms: 100
  forecast: { window_ms: 2000, min_elapsed_ms: 1000 }
workspaces:
  - id: default
    keys: [{ id: test, key: "\${GATEWAY_KEY}" }]
    limits:
      budgets:
        - { period: month, usd: "${usdText(ONE * 400n)}" }
        - { period: day, usd: "${usdText(ONE * 100n)}", per_tag: customer_id }
`,
  );

  const chat = async (customer: string) => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-key': gw.key,
        'x-gateway-metadata-customer-id': customer,
        authorization: `Bearer ${OPENAI_KEY}`,
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.body.text();
    expect(res.statusCode).to.equal(200);
  };

  it('shows each budget closest to its limit with its spend and limit, and a forecast once spend burns', async () => {
    // acme spends about a quarter of its day, the month budget about 6%, beta 1%: with budgets_max 2, beta is left out.
    const until = Date.now() + 2500;
    let sent = 0;
    while (Date.now() < until || sent < 6) {
      await chat('acme');
      sent++;
      await new Promise((r) => setTimeout(r, 100));
    }
    await chat('beta');
    const month = { workspace: 'default', scope: 'workspace', period: 'month' };
    const acme = { workspace: 'default', scope: 'customer_id=acme', period: 'day' };
    let samples = await scrape(gw.adminUrl!);
    await waitFor(
      async () => {
        samples = await scrape(gw.adminUrl!);
        return samplesOf(samples, 'tollgate_budget_spent_usd', month)[0]?.value === usd(ONE * BigInt(sent + 1));
      },
      5000,
      'the month budget to show every answer',
    );
    expect(samplesOf(samples, 'tollgate_budget_limit_usd', month)[0].value).to.equal(usd(ONE * 400n));
    expect(samplesOf(samples, 'tollgate_budget_spent_usd', acme)[0].value).to.equal(usd(ONE * BigInt(sent)));
    expect(samplesOf(samples, 'tollgate_budget_limit_usd', acme)[0].value).to.equal(usd(ONE * 100n));
    // beta spent least of its budget: beyond budgets_max, no series
    expect(samplesOf(samples, 'tollgate_budget_spent_usd')).to.have.length(2);
    expect(samplesOf(samples, 'tollgate_budget_spent_usd', { scope: 'customer_id=beta' })).to.have.length(0);
    // A steady burn over the last two seconds, projected to the end of the month: far more than spent so far.
    const forecast = samplesOf(samples, 'tollgate_budget_forecast_usd', month)[0];
    expect(forecast, 'a forecast for the month budget').to.not.equal(undefined);
    expect(forecast.value).to.be.above(usd(ONE * 400n));
  });
});
