import { expect } from 'chai';
import OpenAI from 'openai';
import { adminGet } from '../helpers/admin';
import { fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import { startTestGateway, type TestGateway, workspaceWith, openaiClient } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const UNPRICED = 'gpt-tollgate-unpriced';

/**
 * budgets.unpriced: a model without a price cannot slip past a budget. The provider is a loopback server answering
 * with a recorded chat completion that names the model asked for; the client is the official openai SDK.
 */
describe('budgets and models without a price', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  const recorded = fixtureJson('openai/chat_completion_cached_tokens.json');
  before(() => upstream.start());
  after(() => upstream.stop());
  beforeEach(() =>
    upstream.respondWith((_req, body) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ ...recorded, model: body?.model })),
    })),
  );
  afterEach(async () => {
    await gw?.stop();
    upstream.reset();
  });
  const start = async (usd: string, policy = '') => {
    gw = await startTestGateway(
      upstream.url,
      `${policy}\n${workspaceWith(`{ budgets: [{ period: day, usd: "${usd}" }] }`)}`,
    );
  };
  const client = () => openaiClient(gw);
  const ask = (model: string) =>
    client().chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
  const spent = async () => (await adminGet(gw, '/api/budgets')).data[0].spent_usd as string;

  it('refuse (the default): 403 model_unpriced naming the model and how to price it; nothing sent, priced models unaffected', async () => {
    await start('0.01');
    for (let i = 0; i < 3; i++) {
      const err = await ask(UNPRICED).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(OpenAI.PermissionDeniedError);
      const e = err as InstanceType<typeof OpenAI.PermissionDeniedError>;
      expect(e.code).to.equal('model_unpriced');
      expect(e.param).to.equal('model');
      expect(e.message)
        .to.include(`Model "${UNPRICED}" of provider openai has no price`)
        .and.to.include('pricing.models')
        .and.to.include('budgets.unpriced');
    }
    expect(upstream.received).to.have.length(0);
    expect((await ask('gpt-4o-mini')).choices).to.have.length(1);
    expect(upstream.received).to.have.length(1);
  });

  it('refuse applies only where a budget does: a workspace without budgets may use the model', async () => {
    gw = await startTestGateway(upstream.url);
    expect((await ask(UNPRICED)).model).to.equal(UNPRICED);
  });

  it('allow: the model passes and the budget counts nothing for it', async () => {
    await start('0.01', 'budgets: { unpriced: allow }');
    for (let i = 0; i < 5; i++) expect((await ask(UNPRICED)).model).to.equal(UNPRICED);
    expect(await spent()).to.equal('0');
  });

  it('audio and images follow the same rule: an unpriced speech model is refused, a priced one counted', async () => {
    await start('0.01');
    const speak = async (model: string) => {
      const res = await client().audio.speech.create({ model, voice: 'alloy', input: 'Ten chars.' });
      await res.arrayBuffer();
    };
    const err = await speak('tts-tollgate-unpriced').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(OpenAI.PermissionDeniedError);
    const e = err as InstanceType<typeof OpenAI.PermissionDeniedError>;
    expect(e.code).to.equal('model_unpriced');
    expect(e.message)
      .to.include('Model "tts-tollgate-unpriced" of provider openai has no price')
      .and.to.include('per_character');
    expect(upstream.received).to.have.length(0);
    await speak('tts-1'); // $0.000015 per character
    expect(await spent()).to.equal('0.00015');
  });

  it('allow: an unpriced speech model passes and counts nothing', async () => {
    await start('0.01', 'budgets: { unpriced: allow }');
    const res = await client().audio.speech.create({ model: 'tts-tollgate-unpriced', voice: 'alloy', input: 'Hi' });
    await res.arrayBuffer();
    expect(upstream.received).to.have.length(1);
    expect(await spent()).to.equal('0');
  });

  describe('price_as', () => {
    const catalog = require(`${PROJECT_ROOT}/pricing/catalog.json`);
    const mini = catalog.models.find((m: any) => m.provider === 'openai' && m.model === 'gpt-4o-mini');
    const pico = (usdPerMillion: string) => {
      const [w, f = ''] = usdPerMillion.split('.');
      return BigInt(w + f.padEnd(6, '0'));
    };
    // The recorded answer's cost at gpt-4o-mini's list price, by hand.
    const u = recorded.usage;
    const cached = u.prompt_tokens_details.cached_tokens;
    const actual =
      BigInt(u.prompt_tokens - cached) * pico(mini.input) +
      BigInt(cached) * pico(mini.cache_read) +
      BigInt(u.completion_tokens) * pico(mini.output);
    const usd = (p: bigint) =>
      `${p / 10n ** 12n}.${(p % 10n ** 12n).toString().padStart(12, '0')}`.replace(/0+$/, '').replace(/\.$/, '');

    it("reserves and counts the unpriced model at the stand-in's price", async () => {
      await start('100', 'budgets: { unpriced: { price_as: gpt-4o-mini } }');
      for (let i = 0; i < 3; i++) expect((await ask(UNPRICED)).model).to.equal(UNPRICED);
      expect(await spent()).to.equal(usd(actual * 3n));
    });

    it('refuses once the spend at the stand-in price leaves no room', async () => {
      await start(usd(actual), 'budgets: { unpriced: { price_as: gpt-4o-mini } }');
      expect((await ask(UNPRICED)).model).to.equal(UNPRICED);
      expect(await spent()).to.equal(usd(actual));
      const err = await ask(UNPRICED).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(OpenAI.RateLimitError);
      expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).to.equal('budget_exceeded');
    });

    it('a stand-in without a price stops the start, naming the setting', async () => {
      const err = await start('1', 'budgets: { unpriced: { price_as: no-such-model } }').then(
        () => null,
        (e: unknown) => e,
      );
      expect(String(err)).to.include(
        'budgets.unpriced.price_as: no deployed provider has a price for model "no-such-model"',
      );
    });
  });
});
