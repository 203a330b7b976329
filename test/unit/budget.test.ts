import { expect } from 'chai';
import { gatewayConfigSchema } from '../../config/schema';
import type { GatewayContext } from '../../core/context';
import { GatewayError } from '../../core/errors';
import {
  captureLogs,
  createPluginHarness,
  createTestContext,
  type PluginHarness,
  type TestContextInit,
} from '../../testing';
import type { Usage } from '../../core/usage';
import type { UsageRecord } from '../../records/usage-record';
import { PriceCatalog } from '../../pricing/catalog';
import { RequestCost } from '../../services/request-cost';
import { budget } from '../../plugins/budget';
import { BudgetLedger } from '../../services/budget-ledger';
import { periodAt } from '../../plugins/budget/periods';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { SqliteUsageStore } from '../../storage/sqlite-store';
import { failingLimitStore } from '../helpers/failing-limit-store';
import { usageRecord } from '../helpers/records';

/**
 * A model priced for easy sums: input $1 and output $2 per 1M tokens, i.e. 1,000,000 and 2,000,000 pico-USD a
 * token (priority: twice that; flex: half); a 100-token context window and at most 50 output tokens.
 */
const pricesOf = () =>
  PriceCatalog.fromConfig({
    models: [
      {
        provider: 'openai',
        model: 'tg-budget-model',
        input: 1,
        output: 2,
        context_window: 100,
        max_output_tokens: 50,
        service_tiers: { priority: { input: 2, output: 4 }, flex: { input: 0.5, output: 1 } },
      },
      {
        provider: 'perplexity',
        model: 'tg-search-model',
        input: 1,
        output: 2,
        max_output_tokens: 50,
        request_fee: { low: '0.00001', medium: '0.00002', high: '0.00004' },
      },
    ],
  });
const MODEL = 'tg-budget-model';

/** A chat body of exactly `bytes` bytes (padded in the message), so the input estimate is bytes / 3 tokens. */
function body(bytes: number, fields: Record<string, unknown> = {}): Record<string, unknown> {
  const json = { model: MODEL, ...fields, messages: [{ role: 'user', content: '' }] };
  json.messages[0].content = 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(json)));
  expect(Buffer.byteLength(JSON.stringify(json))).to.equal(bytes);
  return json;
}

interface Setup {
  harness: PluginHarness;
  limits: MemoryLimitStore;
  usage: SqliteUsageStore;
  ledger: BudgetLedger;
  lines: Record<string, unknown>[];
  close(): Promise<void>;
}

async function budgeted(
  budgets: Record<string, unknown>[],
  seed: Partial<UsageRecord>[] = [],
  opts: { limits?: MemoryLimitStore; limitStore?: Record<string, unknown>; budgets?: Record<string, unknown> } = {},
): Promise<Setup> {
  const prices = pricesOf();
  const limits = opts.limits ?? new MemoryLimitStore();
  const usage = new SqliteUsageStore(':memory:');
  await usage.migrate();
  if (seed.length) await usage.insertBatch(seed.map((r) => record(r, prices.version)));
  const ledger = new BudgetLedger();
  const { logger, lines } = captureLogs('warn');
  const config = gatewayConfigSchema.parse({
    workspaces: [{ id: 'default', limits: { budgets } }, { id: 'no-budgets' }],
    limit_store: opts.limitStore,
    budgets: opts.budgets,
  });
  const harness = await createPluginHarness(budget, {
    services: {
      Config: config,
      LimitStore: limits,
      UsageStore: usage,
      BudgetLedger: ledger,
      Logger: logger,
      PriceCatalog: prices,
      RequestCost: new RequestCost(prices),
    },
  });
  return {
    harness,
    limits,
    usage,
    ledger,
    lines,
    close: async () => (await harness.close(), await limits.close(), await usage.close()),
  };
}

let seq = 0;
function record(r: Partial<UsageRecord>, priceVersion: string): UsageRecord {
  return usageRecord({
    id: `seed-${++seq}`,
    ts: Date.now(),
    keyId: 'test',
    model: MODEL,
    inputTokens: 1,
    outputTokens: 1,
    costPico: 0n,
    provenance: 'measured',
    priceVersion,
    ttfbMs: 1,
    ...r,
  });
}

/** Each request's own log: a plugin that throws in onComplete is logged there, not passed on. */
const requestLog = captureLogs('warn');

/** A completed request through the plugin (refused, or admitted and settled with `usage`). */
async function complete(harness: PluginHarness, init: TestContextInit): Promise<GatewayError | undefined> {
  return harness.exchange(createTestContext({ provider: 'openai', model: MODEL, log: requestLog.logger, ...init }));
}

/** A request admitted and still open (its reservation held); the returned function completes it. */
async function open(
  harness: PluginHarness,
  init: TestContextInit,
): Promise<{ ctx: GatewayContext; finish: (usage?: Usage) => Promise<void> }> {
  const ctx = createTestContext({ provider: 'openai', model: MODEL, log: requestLog.logger, ...init });
  await harness.run('beforeUpstream', ctx);
  return {
    ctx,
    finish: async (usage) => {
      ctx.status = 200;
      ctx.usage = usage;
      await harness.complete(ctx);
    },
  };
}

const endOfUtcDay = () => {
  const d = new Date();
  d.setUTCHours(24, 0, 0, 0);
  return d.getTime();
};

describe('budget plugin', () => {
  beforeEach(() => {
    requestLog.lines.splice(0);
    // periodAt remembers the last period of each kind; asking for one far from now first means no test reuses a
    // period another test (or a mutant under test) left there.
    periodAt('day', 0);
    periodAt('month', 0);
  });
  afterEach(() => expect(requestLog.lines, 'nothing failed inside the plugin').to.deep.equal([]));

  it('is named budget', async () => {
    const s = await budgeted([]);
    expect(budget.name).to.equal('budget');
    expect(s.harness.plugin.name).to.equal('budget');
    await s.close();
  });
  // A: a 150-byte body asking for at most 10 output tokens. Worst case: 150 / 3 = 50 input tokens x 1,000,000
  // + 10 x 2,000,000 = 70,000,000 pico ($0.00007).
  const A = () => body(150, { max_tokens: 10 });

  it('reserves the worst case, settles the real cost, and refuses the first request whose worst case does not fit', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]); // 100,000,000 pico
    expect(await complete(s.harness, { json: A(), usage: { inputTokens: 40, outputTokens: 5 } })).to.equal(undefined);
    // settled: 40 x 1,000,000 + 5 x 2,000,000 = 50,000,000 spent; 50,000,000 + 70,000,000 > 100,000,000
    const before = Date.now();
    const refusal = await complete(s.harness, { json: A() });
    const after = Date.now();
    expect(refusal?.code).to.equal('budget_exceeded');
    expect(refusal?.status).to.equal(429);
    expect(refusal?.message).to.equal(
      'The daily budget of $0.0001 for workspace default does not cover this request: $0.00005 spent, $0 reserved by open requests, this one may cost up to $0.00007.',
    );
    // Retry-After: until the UTC day ends
    const retry = Number(refusal?.headers['retry-after']);
    expect(retry).to.be.within(Math.ceil((endOfUtcDay() - after) / 1000), Math.ceil((endOfUtcDay() - before) / 1000));
    // a smaller worst case still fits: 90 bytes = 30 input tokens + 5 output = 40,000,000
    expect(await complete(s.harness, { json: body(90, { max_tokens: 5 }) })).to.equal(undefined);
    await s.close();
  });

  it('reserves at the costliest tier the request allows (priority, auto), and settles at the tier that served', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0002' }]); // 200,000,000 pico
    const refused = (spent: string, reserved: string, upTo: string) =>
      `The daily budget of $0.0002 for workspace default does not cover this request: $${spent} spent, $${reserved} reserved by open requests, this one may cost up to $${upTo}.`;
    // 300 bytes = 100 input tokens (the context window) and 10 output: 120,000,000 standard, 240,000,000 at priority.
    for (const tier of ['priority', 'auto', 'Priority'])
      expect(
        (await complete(s.harness, { json: body(300, { max_tokens: 10, service_tier: tier }) }))?.message,
      ).to.equal(refused('0', '0', '0.00024'));
    // flex falls back to the standard tier when it has no capacity: the standard 120,000,000 is reserved, not half.
    const flex = await open(s.harness, { json: body(300, { max_tokens: 10, service_tier: 'flex' }) });
    expect((await complete(s.harness, { json: body(300, { max_tokens: 10 }) }))?.message).to.equal(
      refused('0', '0.00012', '0.00012'),
    );
    // Answered at flex: settled at flex's rates, 40 x 500,000 + 5 x 1,000,000 = 25,000,000.
    await flex.finish({ inputTokens: 40, outputTokens: 5, serviceTier: 'flex' });
    // 150 bytes at priority: 50 x 2,000,000 + 10 x 4,000,000 = 140,000,000 reserved.
    const asked = await open(s.harness, { json: body(150, { max_tokens: 10, service_tier: 'priority' }) });
    expect((await complete(s.harness, { json: body(150, { max_tokens: 10 }) }))?.message).to.equal(
      refused('0.000025', '0.00014', '0.00007'),
    );
    // Served at the standard tier: settled at its rates, 20 x 1,000,000 + 5 x 2,000,000 = 30,000,000.
    await asked.finish({ inputTokens: 20, outputTokens: 5, serviceTier: 'default' });
    expect(
      (await complete(s.harness, { json: body(300, { max_tokens: 10, service_tier: 'priority' }) }))?.message,
    ).to.equal(refused('0.000055', '0', '0.00024'));
    await s.close();
  });

  it('admits a worst case of exactly the budget left, and nothing more', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.00007' }]); // 70,000,000 pico
    const exactFit = await open(s.harness, { json: A() });
    await exactFit.finish({ inputTokens: 1 }); // 1,000,000 spent
    expect((await complete(s.harness, { json: A() }))?.message).to.equal(
      'The daily budget of $0.00007 for workspace default does not cover this request: $0.000001 spent, $0 reserved by open requests, this one may cost up to $0.00007.',
    );
    await s.close();
  });

  it('counts the reservations of open requests, and frees them when they settle', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    const first = await open(s.harness, { json: A() }); // reserves 70,000,000
    expect((await complete(s.harness, { json: A() }))?.message).to.equal(
      'The daily budget of $0.0001 for workspace default does not cover this request: $0 spent, $0.00007 reserved by open requests, this one may cost up to $0.00007.',
    );
    await first.finish({ inputTokens: 40, outputTokens: 10 }); // 60,000,000 spent, nothing reserved
    expect((await s.ledger.list())[0]).to.include({
      spentPico: 60_000_000n,
      reservedPico: 0n,
      limitPico: 100_000_000n,
    });
    await s.close();
  });

  it("without max_tokens the worst case is the model's maximum output; with n answers, n times the output", async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    // 50 input tokens (50,000,000) + 50 output tokens, the model's maximum (100,000,000)
    expect((await complete(s.harness, { json: body(150) }))?.message).to.match(/this one may cost up to \$0\.00015\.$/);
    // n = 2: 50,000,000 + 2 x 10 x 2,000,000 = 90,000,000 fits; n = 3: 110,000,000 does not
    // (answered with nothing used, so that each leaves the budget as it was)
    const nothing: Usage = { inputTokens: 0 };
    expect(await complete(s.harness, { json: body(150, { max_tokens: 10, n: 2 }), usage: nothing })).to.equal(
      undefined,
    );
    expect((await complete(s.harness, { json: body(150, { max_tokens: 10, n: 3 }) }))?.message).to.match(
      /may cost up to \$0\.00011\.$/,
    );
    // n that is not a whole number above 1 counts as one answer: 50,000,000 + 25 x 2,000,000 = exactly the budget
    expect(await complete(s.harness, { json: body(150, { max_tokens: 25, n: 1.5 }), usage: nothing })).to.equal(
      undefined,
    );
    expect(await complete(s.harness, { json: body(150, { max_tokens: 25, n: 0 }), usage: nothing })).to.equal(
      undefined,
    );
    // ... and one more output token does not fit, whatever n says: 50,000,000 + 26 x 2,000,000
    expect((await complete(s.harness, { json: body(150, { max_tokens: 26, n: 0 }) }))?.message).to.match(
      /may cost up to \$0\.000102\.$/,
    );
    expect((await complete(s.harness, { json: body(150, { max_tokens: 26, n: 2.5 }) }))?.message).to.match(
      /may cost up to \$0\.000102\.$/,
    );
    // n only multiplies chat completions
    const responses = createTestContext({
      endpoint: 'responses',
      provider: 'openai',
      model: MODEL,
      json: body(150, { max_output_tokens: 25, n: 3 }),
    });
    expect(await s.harness.exchange(responses)).to.equal(undefined);
    await s.close();
  });

  it('an answer whose cost is unknown (no usage) counts as what was reserved for it, never as $0', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    expect(await complete(s.harness, { json: body(150, { max_tokens: 10 }) })).to.equal(undefined);
    // 50 input tokens (50,000,000) + 10 output tokens (20,000,000)
    expect((await s.ledger.list()).map((st) => st.spentPico)).to.deep.equal([70_000_000n]);
    await s.close();
  });

  it('a request fee by search context size is reserved at the costliest size, whatever the answer may report', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    const json = { ...body(150, { max_tokens: 10 }), model: 'tg-search-model' };
    const ctx = createTestContext({ provider: 'perplexity', model: 'tg-search-model', json, log: requestLog.logger });
    // 50 input tokens (50,000,000) + 10 output tokens (20,000,000) + the high fee (40,000,000)
    expect((await s.harness.exchange(ctx))?.message).to.match(/this one may cost up to \$0\.00011\.$/);
    await s.close();
  });

  it("the input estimate rounds bytes / 3 up and stops at the model's context window", async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    // 151 bytes = 51 tokens (50.33 rounded up): 51,000,000 + 25 x 2,000,000 = 101,000,000
    expect((await complete(s.harness, { json: body(151, { max_tokens: 25 }) }))?.message).to.match(
      /may cost up to \$0\.000101\.$/,
    );
    // 900 bytes would be 300 tokens; the window is 100: 100,000,000 + 1 x 2,000,000
    expect((await complete(s.harness, { json: body(900, { max_tokens: 1 }) }))?.message).to.match(
      /may cost up to \$0\.000102\.$/,
    );
    expect(await complete(s.harness, { json: body(900, { max_tokens: 0 }) })).to.equal(undefined); // 100,000,000
    await s.close();
  });

  it("a request without a body reserves the model's maximum output alone", async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    // no input; 50 output tokens x 2,000,000 = 100,000,000: exactly the budget
    expect(
      await s.harness.exchange(createTestContext({ provider: 'openai', model: MODEL, log: requestLog.logger })),
    ).to.equal(undefined);
    expect(
      await s.harness.exchange(
        createTestContext({ endpoint: 'embeddings', provider: 'openai', model: MODEL, log: requestLog.logger }),
      ),
    ).to.equal(undefined);
    await s.close();
  });

  it('a request without a provider, or from a workspace without budgets, is let through untouched', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.000001' }]);
    expect(
      await s.harness.exchange(createTestContext({ model: MODEL, json: body(900), log: requestLog.logger })),
    ).to.equal(undefined);
    expect(await complete(s.harness, { workspace: 'no-budgets', json: body(900) })).to.equal(undefined);
    expect(await complete(s.harness, { workspace: 'unknown', json: body(900) })).to.equal(undefined);
    expect((await s.ledger.list()).map((st) => [st.workspace, st.spentPico, st.reservedPico])).to.deep.equal([
      ['default', 0n, 0n],
    ]);
    await s.close();
  });

  it('refuses naming the budget that does not fit, not the first one', async () => {
    // daily $0.00007 exactly fits the worst case (70,000,000); the monthly $0.00006 does not
    const s = await budgeted([
      { period: 'day', usd: '0.00007' },
      { period: 'month', usd: '0.00006' },
    ]);
    expect((await complete(s.harness, { json: A() }))?.message).to.match(
      /^The monthly budget of \$0\.00006 for workspace default does not cover this request/,
    );
    await s.close();
  });

  it('keeps a reservation alive while its request is open, past the lease', async function () {
    this.timeout(10_000);
    const s = await budgeted([{ period: 'day', usd: '1' }], [], { limitStore: { reservation_lease_ms: 1000 } });
    const first = await open(s.harness, { json: A() });
    // renewed every third of the lease: still held after 1.5 leases
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await s.ledger.list())[0].reservedPico).to.equal(70_000_000n);
    await first.finish();
    expect((await s.ledger.list())[0].reservedPico).to.equal(0n);
    await s.close();
  });

  describe('when the limit store is unreachable (on_error: open)', () => {
    it('admits without a reservation, logged as "budget"; the spend is still settled', async () => {
      const s = await budgeted([{ period: 'day', usd: '0.000001' }], [], { limits: failingLimitStore('reserve') });
      expect(await complete(s.harness, { json: A(), usage: { inputTokens: 5 } })).to.equal(undefined);
      expect(s.lines.map((l) => [l.what, l.msg])).to.deep.equal([
        ['budget', 'limit store unavailable: failing open'],
        [undefined, 'budget alert: 50% of the daily budget used'], // the lowest of the default alert_at
      ]);
      expect((await s.ledger.list())[0].spentPico).to.equal(5_000_000n);
      await s.close();
    });

    it('a settlement that fails is logged as "budget settle"', async () => {
      const s = await budgeted([{ period: 'day', usd: '1' }], [], { limits: failingLimitStore('settle') });
      expect(await complete(s.harness, { json: A(), usage: { inputTokens: 5 } })).to.equal(undefined);
      expect(s.lines.map((l) => l.what)).to.deep.equal(['budget settle']);
      await s.close();
    });

    it('the budgets cannot be listed: 503 limits_unavailable with Retry-After', async () => {
      const s = await budgeted([{ period: 'day', usd: '1' }], [], { limits: failingLimitStore('budgetStates') });
      let error: GatewayError | undefined;
      await s.ledger.list().catch((err: GatewayError) => (error = err));
      expect(error).to.include({
        code: 'limits_unavailable',
        status: 503,
        message: 'Budgets cannot be read right now (limit store unavailable); try again shortly.',
      });
      expect(error?.headers).to.deep.equal({ 'retry-after': '1' });
      await s.close();
    });
  });

  it('a model without a price is refused by default (budgets.unpriced: refuse), reserving nothing', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }]);
    const ctx = createTestContext({ model: 'gpt-unknown', json: { model: 'gpt-unknown', max_tokens: 1_000_000 } });
    const refusal = await s.harness.exchange(ctx);
    expect(refusal).to.include({ code: 'model_unpriced', status: 403 });
    expect(refusal?.message).to.match(/^Model "gpt-unknown" of provider openai has no price/);
    expect((await s.ledger.list())[0]).to.include({ spentPico: 0n, reservedPico: 0n });
    await s.close();
  });

  it('under budgets.unpriced: allow, a model without a price reserves nothing and is admitted', async () => {
    const s = await budgeted([{ period: 'day', usd: '0.0001' }], [], { budgets: { unpriced: 'allow' } });
    const ctx = createTestContext({ model: 'gpt-unknown', json: { model: 'gpt-unknown', max_tokens: 1_000_000 } });
    expect(await s.harness.exchange(ctx)).to.equal(undefined);
    expect((await s.ledger.list())[0]).to.include({ spentPico: 0n, reservedPico: 0n });
    await s.close();
  });

  it('failed and refused requests settle nothing; a stream cut mid-answer settles what it used', async () => {
    const s = await budgeted([{ period: 'day', usd: '1' }]);
    const usage = { inputTokens: 40, outputTokens: 5 }; // 50,000,000
    const failed = await open(s.harness, { json: A() });
    failed.ctx.error = new GatewayError('upstream_timeout', 'no answer');
    await failed.finish(usage);
    const rejected = await open(s.harness, { json: A() });
    rejected.ctx.usage = usage;
    rejected.ctx.status = 400;
    await s.harness.complete(rejected.ctx);
    expect((await s.ledger.list())[0]).to.include({ spentPico: 0n, reservedPico: 0n });
    const cut = await open(s.harness, { json: A() });
    cut.ctx.error = new GatewayError('upstream_unreachable', 'cut');
    cut.ctx.streamCut = true;
    await cut.finish(usage);
    expect((await s.ledger.list())[0]).to.include({ spentPico: 50_000_000n, reservedPico: 0n });
    await s.close();
  });

  it('starts from the spend already recorded this period in the usage store', async () => {
    const yesterday = endOfUtcDay() - 86_400_000 - 1;
    const s = await budgeted(
      [{ period: 'day', usd: '0.0001' }],
      [
        { costPico: 45_000_000n },
        { costPico: 1_000_000_000n, ts: yesterday }, // another period
        { costPico: 1_000_000_000n, workspaceId: 'other' },
      ],
    );
    // 45,000,000 + 70,000,000 > 100,000,000
    expect((await complete(s.harness, { json: A() }))?.message).to.match(/: \$0\.000045 spent, \$0 reserved/);
    expect(await complete(s.harness, { json: body(150, { max_tokens: 2 }) })).to.equal(undefined); // 54,000,000 fits
    await s.close();
  });

  describe('alerts', () => {
    it('logs once when spend reaches exactly alert_at of the budget', async () => {
      const s = await budgeted([{ period: 'day', usd: '0.001', alert_at: 0.05 }]); // alert at 50,000,000
      await complete(s.harness, { json: A(), usage: { inputTokens: 49 } }); // 49,000,000
      expect(s.lines).to.deep.equal([]);
      expect((await s.ledger.list())[0].alerted).to.equal(false);
      await complete(s.harness, { json: A(), usage: { inputTokens: 1 } }); // 50,000,000: exactly 5%
      expect(s.lines).to.have.length(1);
      expect(s.lines[0]).to.include({
        msg: 'budget alert: 5% of the daily budget used',
        workspace: 'default',
        scope: 'workspace',
        spentUsd: '0.00005',
        limitUsd: '0.001',
      });
      expect(s.lines[0].budget).to.match(/^ws:default:all:day:\d+$/);
      expect((await s.ledger.list())[0].alerted).to.equal(true);
      await complete(s.harness, { json: A(), usage: { inputTokens: 1 } });
      expect(s.lines).to.have.length(1); // once per period
      await s.close();
    });

    it('two budgets crossing together are each logged once', async () => {
      const s = await budgeted([
        { period: 'day', usd: '0.001', alert_at: 0.01 },
        { period: 'month', usd: '0.001', alert_at: 0.01 },
      ]);
      await complete(s.harness, { json: A(), usage: { inputTokens: 10 } }); // 10,000,000 = 1% of both
      await complete(s.harness, { json: A(), usage: { inputTokens: 10 } });
      await complete(s.harness, { json: A(), usage: { inputTokens: 10 } });
      expect(s.lines.map((l) => l.msg)).to.deep.equal([
        'budget alert: 1% of the daily budget used',
        'budget alert: 1% of the monthly budget used',
      ]);
      await s.close();
    });

    it('spend recorded before already past alert_at is reported at the first admission (monthly budget)', async () => {
      const s = await budgeted([{ period: 'month', usd: '0.0001', alert_at: 0.2 }], [{ costPico: 20_000_000n }]);
      await open(s.harness, { json: A() });
      expect(s.lines.map((l) => l.msg)).to.deep.equal(['budget alert: 20% of the monthly budget used']);
      await s.close();
    });
  });

  describe('tagged budgets', () => {
    it('a budget per tag value keeps each customer to its own budget, named in the refusal', async () => {
      const s = await budgeted([{ period: 'month', usd: '0.0001', per_tag: 'customer_id' }]);
      const tagged = (customer_id: string, usage?: Usage) =>
        complete(s.harness, { json: A(), tags: { customer_id }, usage });
      expect(await tagged('acme', { inputTokens: 50 })).to.equal(undefined);
      expect((await tagged('acme'))?.message).to.equal(
        'The monthly budget of $0.0001 for customer_id=acme in workspace default does not cover this request: $0.00005 spent, $0 reserved by open requests, this one may cost up to $0.00007.',
      );
      expect(await tagged('globex', { inputTokens: 10 })).to.equal(undefined);
      // a request without the tag is not under this budget
      expect(await complete(s.harness, { json: A(), usage: { inputTokens: 100 } })).to.equal(undefined);
      const statuses = await s.ledger.list();
      expect(statuses.map((st) => [st.scope, st.spentPico])).to.deep.equal([
        ['customer_id=acme', 50_000_000n],
        ['customer_id=globex', 10_000_000n],
      ]);
      expect(statuses[0].key).to.match(/^ws:default:tag:customer_id=acme:month:\d+$/);
      await s.close();
    });

    it('a budget for fixed tag values counts only the requests carrying all of them', async () => {
      const s = await budgeted([{ period: 'day', usd: '0.0001', tag: { customer_id: 'acme', feature: 'search' } }]);
      const send = (tags: Record<string, string>, usage?: Usage) => complete(s.harness, { json: A(), tags, usage });
      expect(await send({ customer_id: 'acme', feature: 'search' }, { inputTokens: 50 })).to.equal(undefined);
      expect(await send({ customer_id: 'acme', feature: 'chat' }, { inputTokens: 100 })).to.equal(undefined);
      expect(await send({ customer_id: 'acme' }, { inputTokens: 100 })).to.equal(undefined);
      expect((await send({ customer_id: 'acme', feature: 'search' }))?.message).to.match(
        /^The daily budget of \$0\.0001 for customer_id=acme,feature=search in workspace default does not cover this request: \$0\.00005 spent/,
      );
      expect((await s.ledger.list())[0].key).to.equal(
        `ws:default:tag:customer_id=acme:tag:feature=search:day:${endOfUtcDay() - 86_400_000}`,
      );
      await s.close();
    });

    it('budgets per value of two different tags keep their values apart', async () => {
      const s = await budgeted([
        { period: 'day', usd: '1', per_tag: 'customer_id' },
        { period: 'day', usd: '1', per_tag: 'feature' },
      ]);
      await complete(s.harness, { json: A(), tags: { customer_id: 'acme' }, usage: { inputTokens: 1 } });
      // The feature budget has no value yet: listed once, at zero, never under acme's customer_id.
      expect((await s.ledger.list()).map((st) => [st.scope, st.spentPico > 0n])).to.deep.equal([
        ['customer_id=acme', true],
        ['feature=*', false],
      ]);
      await s.close();
    });
  });

  it("GET /api/budgets before any request reads the spend recorded this period, this workspace's only, per tag value", async () => {
    const yesterday = endOfUtcDay() - 86_400_000 - 1;
    const s = await budgeted(
      [
        { period: 'day', usd: '1' },
        { period: 'day', usd: '1', per_tag: 'customer_id' },
      ],
      [
        { costPico: 5_000_000n, tags: { customer_id: 'acme' } },
        { costPico: 2_000_000n },
        { costPico: 900_000_000n, ts: yesterday, tags: { customer_id: 'acme' } },
        { costPico: 800_000_000n, workspaceId: 'other', tags: { customer_id: 'globex' } },
      ],
    );
    expect((await s.ledger.list()).map((st) => [st.scope, st.spentPico])).to.deep.equal([
      ['workspace', 7_000_000n],
      ['customer_id=acme', 5_000_000n],
    ]);
    await s.close();
  });

  it('GET /api/budgets (the ledger) lists every budget in its period with limit, spend and alert, per-tag ones for each value seen', async () => {
    const s = await budgeted(
      [
        { period: 'day', usd: '0.0001' },
        { period: 'month', usd: '12.5', per_tag: 'customer_id', alert_at: 0.9 },
      ],
      [{ costPico: 7_000_000n, tags: { customer_id: 'initech' } }, { costPico: 3_000_000n }],
    );
    await complete(s.harness, { json: A(), tags: { customer_id: 'acme' }, usage: { inputTokens: 40 } });
    const now = new Date();
    const dayStart = endOfUtcDay() - 86_400_000;
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    const month = {
      workspace: 'default',
      period: 'month',
      periodStart: monthStart,
      periodEnd: monthEnd,
      limitPico: 12_500_000_000_000n,
      reservedPico: 0n,
      alertAt: [0.9],
      alerted: false,
      action: 'block',
    };
    expect(await s.ledger.list()).to.deep.equal([
      // the day's spend: 7,000,000 + 3,000,000 recorded before, 40,000,000 settled now
      {
        key: `ws:default:all:day:${dayStart}`,
        id: 'yaml:default:0',
        source: 'yaml',
        workspace: 'default',
        scope: 'workspace',
        period: 'day',
        periodStart: dayStart,
        periodEnd: endOfUtcDay(),
        limitPico: 100_000_000n,
        spentPico: 50_000_000n,
        reservedPico: 0n,
        alertAt: [0.5, 0.8, 1],
        alerted: true, // 50% spent: the lowest of the default alert_at
        action: 'block',
        filters: { workspace: 'default' },
      },
      {
        key: `ws:default:tag:customer_id=acme:month:${monthStart}`,
        id: 'yaml:default:1',
        source: 'yaml',
        scope: 'customer_id=acme',
        filters: { workspace: 'default', customer_id: 'acme' },
        spentPico: 40_000_000n,
        ...month,
      },
      {
        key: `ws:default:tag:customer_id=initech:month:${monthStart}`,
        id: 'yaml:default:1',
        source: 'yaml',
        scope: 'customer_id=initech',
        filters: { workspace: 'default', customer_id: 'initech' },
        spentPico: 7_000_000n,
        ...month,
      },
    ]);
    await s.close();
  });
});
