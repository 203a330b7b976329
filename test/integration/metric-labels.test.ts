import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import OpenAI from 'openai';
import { waitForRecords } from '../helpers/admin';
import { OPENAI_KEY, startTestGateway, type TestGateway, useGatewayPerTest } from '../helpers/gateway';
import { scrape, total } from '../helpers/prometheus';
import { TestUpstream } from '../helpers/upstream';

/**
 * Metric label slots cannot be taken by a client: made-up model names and tag values are flooded first, then real
 * ones still get their own label. The provider is a loopback server replaying a recorded chat completion (every
 * answer priced); the client is the official openai SDK; the labels are read from a real scrape.
 */
describe('metric labels a client cannot take', function () {
  this.timeout(60_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGatewayPerTest(upstream, () => gw);
  const send = (model: string, feature?: string) =>
    new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: {
        'X-Gateway-Key': gw.key,
        'X-Gateway-Provider': 'openai',
        ...(feature ? { 'X-Gateway-Metadata-Feature': feature } : {}),
      },
    }).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });

  it('a flood of made-up model names (dated like real ones) leaves a real model its own label', async () => {
    gw = await startTestGateway(upstream.url, 'metrics: { models_max: 2 }');
    for (let day = 1; day <= 20; day++) await send(`gpt-4o-mini-2099-01-${String(day).padStart(2, '0')}`);
    for (let i = 0; i < 5; i++) await send(`gpt-made-up-${i}`);
    await send('gpt-4o');
    await waitForRecords(gw, 26);
    const samples = await scrape(gw.adminUrl!);
    const requests = (model: string) => total(samples, 'tollgate_requests_total', { provider: 'openai', model });
    // The dated names are priced as gpt-4o-mini, and counted under its name; the rest has no price.
    expect([requests('gpt-4o-mini'), requests('gpt-4o'), requests('other')]).to.deep.equal([20, 1, 5]);
    expect(samples.some((s) => /2099|made-up/.test(s.labels.model ?? ''))).to.equal(false);
  });

  it('a flood of made-up tag values leaves a value with more spend its own label once the labels are chosen again', async () => {
    gw = await startTestGateway(
      upstream.url,
      'metrics: { tag_keys: [feature], tag_values_max: 2, tag_values_refresh_ms: 300 }',
    );
    for (let i = 0; i < 30; i++) await send('gpt-4o-mini', `flood-${i}`);
    for (let i = 0; i < 3; i++) await send('gpt-4o-mini', 'checkout');
    await sleep(400); // past tag_values_refresh_ms: the next answer chooses the labels again
    await send('gpt-4o-mini', 'checkout');
    await waitForRecords(gw, 34);
    const samples = await scrape(gw.adminUrl!);
    const output = (feature: string) =>
      total(samples, 'tollgate_tokens_total', { type: 'output', tag_feature: feature });
    // The answers of `checkout` since the labels were last chosen, with it among the two values that spent most.
    expect(output('checkout')).to.be.greaterThan(0);
    expect(output('other')).to.be.greaterThan(0);
  });
});
